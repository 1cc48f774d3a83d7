#!/usr/bin/env bash
# `cmake --install` of a built tree into a DESTDIR, checked file by file:
#
#   tests/install/staged.sh BUILD_DIR
#
# For the prefixes /usr (Wireshark's own on Debian: what the .deb installs)
# and /usr/local (make install's default), into a fresh DESTDIR each:
#   - the tree holds exactly bin/kwire, a gzipped (gzip -n) man page for
#     kwire and for each command kwire --help lists, the bash completion,
#     kwire.so in epan/ of the plugin folder pkg-config names for wireshark
#     (made relative to Wireshark's prefix) and kwire.lua in the folder above;
#     kwire.so is not executable, as Wireshark's own plugins; for /usr the
#     paths are pkg-config's exactly and the install says nothing about them,
#     for /usr/local it says where the plugin went and that Wireshark does
#     not look there;
#   - each page renders with man --warnings at 80 columns without a warning,
#     its SYNOPSIS is the help's usage lines, its OPTIONS (.TP items) name
#     exactly the options of that command's --help, in order, kwire(1)'s
#     COMMANDS exactly the commands, and EXIT STATUS is there iff the help
#     has one;
#   - the completion, sourced in bash, offers the commands for `kwire `,
#     exactly a command's --help options for `kwire CMD `, files after an
#     option taking FILE and directories after --spec-dir;
#   - the installed kwire decodes captures/demo.pcapng;
#   - as root, tests/install/smoke.sh passes on the /usr/local tree (through
#     WIRESHARK_PLUGIN_DIR, as nobody).
# The options are read from --help here with a rule of its own (an option
# line starts "  -"; "-h, --help" and "--overlay NAME, --spec-dir DIR" name
# two), not from kwire's option tables, so a generator bug shows.
set -uo pipefail

build=${1:?usage: tests/install/staged.sh BUILD_DIR}
build=$(cd "$build" && pwd) || exit 2
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
[ -f "$build/cmake_install.cmake" ] || { echo "staged.sh: $build is not a configured build tree" >&2; exit 2; }

failed=0
checks=0
ok() { checks=$((checks + 1)); echo "ok   $*"; }
fail() { checks=$((checks + 1)); failed=$((failed + 1)); echo "FAIL $*"; }

work=$(mktemp -d /tmp/kwire-staged.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"   # smoke.sh runs tshark as nobody on the tree

command -v man >/dev/null || fail "man is not installed (man-db: tools/install-deps test)"
ws_prefix=$(pkg-config --variable=prefix wireshark)
ws_plugindir=$(pkg-config --variable=plugindir wireshark)
[ -n "$ws_plugindir" ] || fail "pkg-config knows no wireshark plugindir (wireshark-dev)"
rel_plugindir=${ws_plugindir#"$ws_prefix"/}   # lib/x86_64-linux-gnu/wireshark/plugins/4.0

# help_options HELP_TEXT: the option names of the "  -x ..." lines, in order.
help_options() {
  awk '/^  -/ {
         n = split($0, t, " ")
         print (t[1] ~ /,$/ ? substr(t[1], 1, length(t[1]) - 1) : t[1])
         for (i = 1; i < n; i++) {
           # "X," before an option: that option is another name of the item.
           if (t[i] ~ /,$/ && t[i + 1] ~ /^-/) {
             o = t[i + 1]; sub(/,$/, "", o); print o
           } else if (i > 1 && t[i] !~ /,$/) break
         }
       }' <<<"$1"
}
# man_section PAGE.gz NAME: the roff lines of section NAME.
man_section() {
  zcat "$1" | awk -v s=".SH $2" '$0 == s {on = 1; next} /^\.SH / {on = 0} on'
}
# roff_plain: font escapes removed, \- and \e as - and \.
roff_plain() { sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/\\e/\\/g' -e 's/\\&//g'; }
# man_options PAGE.gz: the option names of the .TP items of OPTIONS.
man_options() {
  man_section "$1" OPTIONS | awk 'tp {print; tp = 0} /^\.TP$/ {tp = 1}' | roff_plain |
    sed 's/, /\n/g' | awk '{print $1}'
}

stage() {  # stage PREFIX: installs into $work/PREFIX-NAME, checks the tree
  local prefix=$1 dest="$work/dest$(echo "$1" | tr / -)"
  local out kwire cmds page file want got
  out=$(DESTDIR="$dest" cmake --install "$build" --prefix "$prefix" 2>&1) \
    && ok "[$prefix] DESTDIR=$dest cmake --install $build --prefix $prefix" \
    || { fail "[$prefix] cmake --install failed: $(tail -5 <<<"$out")"; return; }
  chmod -R a+rX "$dest"
  local root="$dest$prefix"
  kwire="$root/bin/kwire"
  [ -x "$kwire" ] && "$kwire" --version >/dev/null && ok "[$prefix] bin/kwire runs: $("$kwire" --version)" \
    || { fail "[$prefix] $kwire is missing or does not run"; return; }
  mapfile -t cmds < <("$kwire" --help | awk '/^commands:/ {c=1; next} c && /^  [a-z]/ {print $1} c && /^$/ {c=0}')
  [ ${#cmds[@]} -gt 0 ] && ok "[$prefix] kwire --help lists ${#cmds[@]} commands: ${cmds[*]}" \
    || fail "[$prefix] kwire --help lists no commands"

  # ---- The tree: exactly these files.
  local so="$rel_plugindir/epan/kwire.so" lua
  lua="$(dirname "$rel_plugindir")/kwire.lua"
  want=$( { echo bin/kwire; echo share/bash-completion/completions/kwire; echo "$so"; echo "$lua"
            echo share/man/man1/kwire.1.gz; for c in "${cmds[@]}"; do echo "share/man/man1/kwire-$c.1.gz"; done; } | sort)
  got=$(cd "$root" && find . -type f -o -type l | sed 's|^\./||' | sort)
  [ "$got" = "$want" ] && ok "[$prefix] the tree holds exactly: $(tr '\n' ' ' <<<"$want")" \
    || fail "[$prefix] the tree differs from what is expected: $(diff <(echo "$want") <(echo "$got") | grep '^[<>]' | tr '\n' ' ')"
  if [ -f "$root/$so" ]; then
    [ "$(stat -c %a "$root/$so")" = 644 ] && ok "[$prefix] kwire.so is mode 644" \
      || fail "[$prefix] kwire.so is mode $(stat -c %a "$root/$so"), not 644"
  fi
  if [ "$prefix" = "$ws_prefix" ]; then
    [ "$prefix/$so" = "$ws_plugindir/epan/kwire.so" ] && ! grep -q "only searches" <<<"$out" \
      && ok "[$prefix] kwire.so at pkg-config's plugindir $ws_plugindir/epan, and no note about it" \
      || fail "[$prefix] kwire.so not at $ws_plugindir/epan, or the install printed a note: $(grep kwire: <<<"$out")"
  else
    grep -q "kwire: the Wireshark plugin is in $root/$so .*only searches its own folders: $ws_plugindir/epan" <<<"$out" \
      && ok "[$prefix] the install says where kwire.so went and that Wireshark searches $ws_plugindir/epan" \
      || fail "[$prefix] no note that Wireshark does not search $prefix: $(grep -A2 kwire: <<<"$out")"
  fi

  # ---- The man pages.
  for page in kwire "${cmds[@]/#/kwire-}"; do
    file="$root/share/man/man1/$page.1.gz"
    [ -f "$file" ] || continue   # reported with the tree
    local c=${page#kwire} help
    c=${c#-}
    help=$("$kwire" $c --help)
    # gzip -n, as Debian: no file name (FLG bit 3) and time stamp 0.
    [ "$(od -An -tx1 -j3 -N5 "$file" | tr -d ' ')" = 0000000000 ] && ok "[$prefix] $page.1.gz is gzip -n" \
      || fail "[$prefix] $page.1.gz carries a name or a time stamp: $(od -An -tx1 -N10 "$file")"
    local warnings
    warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$file" 2>&1 >/dev/null; echo "rc=$?")
    [ "$warnings" = "rc=0" ] && ok "[$prefix] man --warnings -l $page.1.gz: no warnings" \
      || fail "[$prefix] man --warnings -l $page.1.gz: $warnings"
    want=$(help_options "$help")
    got=$(man_options "$file")
    [ "$got" = "$want" ] && ok "[$prefix] $page(1) OPTIONS are kwire${c:+ $c} --help's: $(echo $want)" \
      || fail "[$prefix] $page(1) OPTIONS differ from kwire $c --help: $(diff <(echo "$want") <(echo "$got") | grep '^[<>]' | tr '\n' ' ')"
    # SYNOPSIS: the usage lines, rendered, without the forms' descriptions.
    want=$(awk '/^usage: / {sub(/^usage: /, ""); u = 1} u && /^ *kwire/ {sub(/^ +/, ""); sub(/  +.*/, ""); print; next} {u = 0}' <<<"$help")
    got=$(LC_ALL=C.UTF-8 MANWIDTH=200 man -l "$file" 2>/dev/null | awk '/^SYNOPSIS/ {s = 1; next} /^[A-Z]/ {s = 0} s && NF' | sed 's/^ *//')
    [ "$got" = "$want" ] && ok "[$prefix] $page(1) SYNOPSIS is kwire${c:+ $c} --help's usage" \
      || fail "[$prefix] $page(1) SYNOPSIS '$got' is not the usage '$want'"
    local has_exit=no has_section=no
    grep -q '^exit status:' <<<"$help" && has_exit=yes
    zcat "$file" | grep -q '^\.SH EXIT STATUS' && has_section=yes
    [ "$has_exit" = "$has_section" ] && ok "[$prefix] $page(1) EXIT STATUS: $has_section, as in the help" \
      || fail "[$prefix] $page(1) EXIT STATUS section: $has_section, help has exit status: $has_exit"
    if [ "$page" = kwire ]; then
      got=$(man_section "$file" COMMANDS | awk 'tp {print $1; tp = 0} /^\.TP$/ {tp = 1}' | roff_plain)
      [ "$got" = "$(printf '%s\n' "${cmds[@]}")" ] && ok "[$prefix] kwire(1) COMMANDS are kwire --help's" \
        || fail "[$prefix] kwire(1) COMMANDS '$(echo $got)' are not '${cmds[*]}'"
    fi
  done

  # ---- The bash completion.
  local comp="$root/share/bash-completion/completions/kwire"
  if [ -f "$comp" ]; then
    complete_words() {  # complete_words WORD...: what _kwire offers for the last word
      (cd "$work/files" && bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _kwire; printf "%s\n" "${COMPREPLY[@]}"' \
        _ "$comp" "$@" | sort)
    }
    mkdir -p "$work/files/somedir"
    : >"$work/files/capture one.pcapng"
    got=$(complete_words kwire "")
    want=$( { printf '%s\n' "${cmds[@]}" --help --version; help_options "$("$kwire" --help)"; } | sort -u)
    [ "$got" = "$want" ] && ok "[$prefix] completion of 'kwire ': the commands and $(grep -- '^-' <<<"$want" | paste -sd' ')" \
      || fail "[$prefix] completion of 'kwire ': $(echo $got)"
    for c in "${cmds[@]}"; do
      want=$(help_options "$("$kwire" "$c" --help)" | sort -u)
      got=$(complete_words kwire "$c" "")
      [ "$got" = "$want" ] && ok "[$prefix] completion of 'kwire $c ': exactly its $(wc -l <<<"$want") options" \
        || fail "[$prefix] completion of 'kwire $c ': $(diff <(echo "$want") <(echo "$got") | grep '^[<>]' | tr '\n' ' ')"
    done
    got=$(complete_words kwire decode -r "cap")
    [ "$got" = "capture one.pcapng" ] && ok "[$prefix] completion of 'kwire decode -r cap': the file 'capture one.pcapng'" \
      || fail "[$prefix] completion of 'kwire decode -r cap': '$got'"
    got=$(complete_words kwire decode --spec-dir "")
    [ "$got" = somedir ] && ok "[$prefix] completion of 'kwire decode --spec-dir ': directories only" \
      || fail "[$prefix] completion of 'kwire decode --spec-dir ': '$got'"
    got=$(complete_words kwire decode -T "")
    [ "$got" = "$(printf '%s\n' fields json text)" ] && ok "[$prefix] completion of 'kwire decode -T ': fields json text" \
      || fail "[$prefix] completion of 'kwire decode -T ': '$(echo $got)'"
  fi

  # ---- The installed command works.
  out=$("$kwire" decode -r "$src/captures/demo.pcapng" --stats -c 0 2>&1) && [[ "$out" == stats:\ frames=* ]] \
    && ok "[$prefix] installed kwire decode -r captures/demo.pcapng --stats: $out" \
    || fail "[$prefix] installed kwire decode: $out"
}

stage /usr
stage /usr/local

if [ "$(id -u)" -eq 0 ] && command -v tshark >/dev/null; then
  echo "--- tests/install/smoke.sh on the staged /usr/local tree"
  if "$here/smoke.sh" --capture "$src/captures/demo.pcapng" "$work/dest-usr-local/usr/local" | sed 's/^/  /'; then
    ok "smoke.sh passes on the staged /usr/local tree"
  else
    fail "smoke.sh fails on the staged /usr/local tree"
  fi
else
  echo "note: smoke.sh on the staged tree needs root and tshark: not run"
fi

if [ "$failed" -eq 0 ]; then
  echo "PASS: $checks checks"
else
  echo "FAIL: $failed of $checks checks failed"
  exit 1
fi
