#!/usr/bin/env bash
# Checks an installed kwire, as a user of the .deb or of `make install` meets it:
#
#   tests/install/smoke.sh [--capture FILE] [--move-plugin] [PREFIX]
#
# PREFIX is where kwire was installed (default /usr, the .deb's; /usr/local
# for a plain `make install`; DESTDIR/usr/local for a staged tree). FILE is a
# Kafka capture (default: captures/demo.pcapng of the checkout this script
# is in; tests/distro copies this folder alone and passes --capture).
#
# It checks: kwire --version; kwire(1) and a page per command that
# kwire --help lists, found by man -w; the bash completion; kwire decode
# --stats on FILE; and in tshark, as root and as the unprivileged user nobody
# (own temporary HOME): tshark -G plugins lists kwire.so from PREFIX and
# kwire.lua, kwire.lua loads without error beside the plugin (it steps aside),
# and tshark's kwire.api_key per frame equals kwire decode's apiKey per frame;
# then kwire.lua alone (a Wireshark folder without kwire.so, as where the .so
# does not fit) decodes the same. --move-plugin (a throwaway system only, as
# tests/distro's) moves the installed kwire.so aside for a moment to check
# kwire.lua alone from the global Lua folder, for root and for nobody. For /usr, kwire.so and kwire.lua must be in
# the global folders `tshark -G folders` names. Another PREFIX, whose plugin
# folder is not Wireshark's own, is checked as nobody through
# WIRESHARK_PLUGIN_DIR (tshark run by root ignores that variable, so root's
# check is not possible there).
#
# Needs root (for the root and nobody runs), tshark and man (man-db). Prints
# "ok"/"FAIL" per check and exits 1 if any failed. A missing prerequisite is
# a failure, never a skip.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
capture=""
prefix=/usr
move_plugin=0
while [ $# -gt 0 ]; do
  case "$1" in
    --capture) capture=${2:?--capture needs a file}; shift 2 ;;
    --move-plugin) move_plugin=1; shift ;;
    -h|--help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "smoke.sh: unknown option $1" >&2; exit 2 ;;
    *) prefix=$1; shift ;;
  esac
done
[ -n "$capture" ] || capture="$here/../../captures/demo.pcapng"
prefix=$(cd "$prefix" 2>/dev/null && pwd) || { echo "smoke.sh: no such prefix $prefix" >&2; exit 2; }

failed=0
checks=0
ok() { checks=$((checks + 1)); echo "ok   $*"; }
fail() { checks=$((checks + 1)); failed=$((failed + 1)); echo "FAIL $*"; }
need() { command -v "$1" >/dev/null || { fail "$1 is not installed ($2)"; return 1; }; }

work=$(mktemp -d /tmp/kwire-smoke.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"

# ---- The command -------------------------------------------------------------
kwire="$prefix/bin/kwire"
if [ -x "$kwire" ] && v=$("$kwire" --version) && [[ "$v" =~ ^kwire\ [0-9]+\.[0-9]+\.[0-9]+ ]]; then
  ok "$kwire --version: $v"
else
  fail "$kwire --version (is kwire installed in $prefix?)"
  echo "FAIL: $failed of $checks checks"
  exit 1
fi
# The commands, as kwire --help lists them ("  decode -r FILE   decode ...").
mapfile -t commands < <("$kwire" --help | awk '/^commands:/ {c=1; next} c && /^  [a-z]/ {print $1} c && /^$/ {c=0}')
[ ${#commands[@]} -gt 0 ] && ok "kwire --help lists the commands: ${commands[*]}" || fail "kwire --help lists no commands"

# ---- Man pages ------------------------------------------------------------------
if need man "man-db"; then
  for page in kwire "${commands[@]/#/kwire-}"; do
    file="$prefix/share/man/man1/$page.1.gz"
    [ -f "$file" ] || { fail "man page $file is missing"; continue; }
    # man's default path knows /usr and /usr/local; another prefix is named.
    found=$(man -w "$page" 2>/dev/null || true)
    how="man -w $page"
    if [ "$found" != "$file" ]; then
      found=$(man -M "$prefix/share/man" -w "$page" 2>/dev/null || true)
      how="man -M $prefix/share/man -w $page"
    fi
    warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$file" 2>&1 >/dev/null; echo "rc=$?")
    if [ "$found" != "$file" ]; then
      fail "$how finds '${found}', not $file"
    elif [ "$warnings" != "rc=0" ]; then
      fail "man --warnings -l $file: $warnings"
    else
      ok "$how: $found (renders without warnings)"
    fi
  done
fi

# ---- Bash completion -------------------------------------------------------------
completion="$prefix/share/bash-completion/completions/kwire"
if [ -f "$completion" ]; then
  got=$(bash -c 'source "$1" && COMP_WORDS=(kwire de) COMP_CWORD=1 && _kwire && echo "${COMPREPLY[*]}"' _ "$completion" 2>&1)
  got2=$(bash -c 'source "$1" && COMP_WORDS=(kwire decode --sta) COMP_CWORD=2 && _kwire && echo "${COMPREPLY[*]}"' _ "$completion" 2>&1)
  if [ "$got" = decode ] && [ "$got2" = --stats ]; then
    ok "$completion completes 'kwire de' to decode and 'kwire decode --sta' to --stats"
  else
    fail "$completion: 'kwire de' gave '$got', 'kwire decode --sta' gave '$got2'"
  fi
else
  fail "bash completion $completion is missing"
fi

# ---- kwire decode -----------------------------------------------------------------
if [ ! -r "$capture" ]; then
  fail "no capture to decode: $capture (pass --capture FILE)"
else
  cp "$capture" "$work/capture.pcapng"
  chmod 644 "$work/capture.pcapng"
  capture="$work/capture.pcapng"
  stats=$("$kwire" decode -r "$capture" --stats -c 0 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && [[ "$stats" =~ stats:\ frames=[0-9]+\ requests=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
    ok "kwire decode -r $(basename "$capture") --stats: $stats"
  else
    fail "kwire decode -r $capture --stats exited $rc: $stats"
  fi
  # What tshark must agree with: the api key of each message, by frame.
  "$kwire" decode -r "$capture" -T fields -e frame -e apiKey | sort >"$work/kwire.fields"
fi

# ---- tshark ---------------------------------------------------------------------------
# PREFIX/lib/<multiarch>/wireshark/plugins/X.Y/epan/kwire.so (Debian), or
# PREFIX/lib/wireshark/... elsewhere; not below PREFIX/local.
mapfile -t sos < <(find "$prefix"/lib* -maxdepth 6 -path '*/wireshark/plugins/*/epan/kwire.so' 2>/dev/null)
so=${sos[0]:-}
lua=""
[ -n "$so" ] && lua="$(dirname "$(dirname "$(dirname "$so")")")/kwire.lua"
if [ -z "$so" ]; then
  fail "no lib*/.../wireshark/plugins/X.Y/epan/kwire.so under $prefix"
elif [ ${#sos[@]} -gt 1 ]; then
  fail "more than one kwire.so under $prefix: ${sos[*]}"
elif [ ! -f "$lua" ]; then
  fail "kwire.lua is not in the Lua plugin folder above $so ($lua)"
elif [ "$(id -u)" -ne 0 ]; then
  fail "the tshark checks run as root and as nobody: run smoke.sh as root"
elif need tshark "the .deb recommends it: apt-get install tshark" && need setpriv "util-linux"; then
  ok "installed: $so and $lua"
  # "Global Plugins:      \t/usr/lib/x86_64-linux-gnu/wireshark/plugins/4.0"
  folder() { HOME="$work" tshark -G folders 2>/dev/null | sed -n "s/^$1:[[:space:]]*//p"; }
  global_plugins=$(folder "Global Plugins")
  global_lua=$(folder "Global Lua Plugins")
  plugins_root=""   # WIRESHARK_PLUGIN_DIR for a PREFIX that is not Wireshark's
  if [ -z "$global_plugins" ] || [ -z "$global_lua" ]; then
    fail "tshark -G folders names no Global Plugins or Global Lua Plugins folder"
  elif [ "$(dirname "$(dirname "$so")")" = "$global_plugins" ] && [ "$(dirname "$lua")" = "$global_lua" ]; then
    ok "kwire.so and kwire.lua are in Wireshark's global folders ($global_plugins, $global_lua)"
  elif [ "$prefix" = /usr ]; then
    # The .deb's prefix: its plugin must be where this Wireshark looks.
    fail "kwire.so and kwire.lua ($so, $lua) are not in Wireshark's global folders ($global_plugins, $global_lua)"
  else
    plugins_root=$(dirname "$lua")
    echo "note $prefix is not Wireshark's prefix (its folders: $global_plugins, $global_lua): checking as nobody" \
         "with WIRESHARK_PLUGIN_DIR=$plugins_root; root's tshark would not find the plugin there"
  fi
  mkdir -p "$work/home-root" "$work/home-nobody"
  chown nobody "$work/home-nobody"

  # ts USER [ENV=VALUE ...] -- TSHARK-ARGS: tshark as USER, with its own HOME.
  ts() {
    local user=$1; shift
    local envs=("HOME=$work/home-$user" "LC_ALL=C.UTF-8" "PATH=/usr/sbin:/usr/bin:/sbin:/bin")
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    if [ "$user" = root ]; then
      env -i "${envs[@]}" tshark "$@"
    else
      # setpriv (util-linux, in every Debian): nobody, without root's groups.
      (cd "$work" && setpriv --reuid=nobody --regid=nogroup --clear-groups env -i "${envs[@]}" tshark "$@")
    fi
  }
  # check_tshark WHO USER SO LUA [ENV=VALUE ...]: tshark -G plugins lists the
  # plugin SO ("" for none) and the Lua script LUA, tshark starts without
  # errors, and its api keys per frame are kwire decode's.
  check_tshark() {
    local who=$1 user=$2 want_so=$3 want_lua=$4; shift 4
    local list err fields line
    list=$(ts "$user" "$@" -- -G plugins 2>"$work/err")
    err=$(grep -v 'Running as user "root"' "$work/err")
    line=$(grep '^kwire\.so' <<<"$list" | tr -s '\t' ' ')
    if [ -n "$want_so" ]; then
      [[ "$line" == *" dissector $want_so" ]] && ok "$who: tshark -G plugins lists $line" \
        || fail "$who: tshark -G plugins does not list $want_so: '$line'"
    else
      [ -z "$line" ] && ok "$who: no kwire.so loaded" || fail "$who: expected kwire.lua alone, but: $line"
    fi
    # The plugin type reads "lua script" up to 4.4 and "Lua script" in 4.6.
    line=$(grep '^kwire\.lua' <<<"$list" | tr -s '\t' ' ' | sed 's/ [Ll]ua script / lua script /')
    [[ "$line" == *" lua script $want_lua" ]] && ok "$who: tshark -G plugins lists $line" \
      || fail "$who: tshark -G plugins does not list $want_lua: '$line'"
    [ -z "$err" ] && ok "$who: tshark starts without errors (no Lua error from kwire.lua)" \
      || fail "$who: tshark printed: $err"
    [ -s "$work/kwire.fields" ] || { fail "$who: no kwire decode fields to compare with"; return; }
    fields=$(ts "$user" "$@" -- -r "$capture" -Y kwire -T fields -e frame.number -e kwire.api_key 2>/dev/null |
             awk -F'\t' '{n = split($2, v, ","); for (i = 1; i <= n; i++) if (v[i] != "") print $1 "\t" v[i]}' | sort)
    if [ -z "$fields" ]; then
      fail "$who: tshark -Y kwire -e kwire.api_key found nothing in $(basename "$capture")"
    elif [ "$fields" = "$(cat "$work/kwire.fields")" ]; then
      ok "$who: tshark's kwire.api_key per frame equals kwire decode's ($(wc -l <<<"$fields") messages)"
    else
      fail "$who: tshark's kwire.api_key per frame differs from kwire decode's:" \
           "$(diff <(echo "$fields") "$work/kwire.fields" | head -5 | tr '\n' ' ')"
    fi
  }

  if [ -z "$plugins_root" ]; then
    check_tshark "root" root "$so" "$lua"
    check_tshark "nobody" nobody "$so" "$lua"
    if [ "$move_plugin" -eq 1 ]; then
      # kwire.lua alone from Wireshark's global Lua folder, as a Wireshark the
      # .so does not fit loads it: root (which skips -X lua_script: and
      # personal Lua plugins on 4.4 and later) and a user.
      mv "$so" "$work/kwire.so.aside"
      check_tshark "root, global kwire.lua alone" root "" "$lua"
      check_tshark "nobody, global kwire.lua alone" nobody "" "$lua"
      mv "$work/kwire.so.aside" "$so"
    fi
  else
    check_tshark "nobody" nobody "$so" "$lua" "WIRESHARK_PLUGIN_DIR=$plugins_root"
  fi
  # kwire.lua where no kwire.so fits: a global folder with kwire.lua alone.
  mkdir -p "$work/lua-only"
  cp "$lua" "$work/lua-only/kwire.lua"
  chmod -R a+rX "$work/lua-only"
  check_tshark "nobody, kwire.lua alone" nobody "" "$work/lua-only/kwire.lua" "WIRESHARK_PLUGIN_DIR=$work/lua-only"
fi

if [ "$failed" -eq 0 ]; then
  echo "PASS: $checks checks ($prefix)"
else
  echo "FAIL: $failed of $checks checks failed ($prefix)"
  exit 1
fi
