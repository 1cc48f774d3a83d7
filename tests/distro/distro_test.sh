#!/usr/bin/env bash
# kwire on another Debian release, from scratch, as a new user gets it:
#
#   tests/distro/distro_test.sh RELEASE OUT_DIR       (root; RELEASE: trixie or sid)
#
# In a clean chroot of RELEASE made with debootstrap from the Debian mirror:
#   1. tools/install-deps, then `make build` with warnings as errors (trixie
#      with its GCC, sid with clang-19: see compiler_of below);
#   2. the plugin built there inside that release's tshark, as an unprivileged
#      user: the tests/wireshark checks (fields, captures, filters, malformed,
#      coexist, overlay, lua, lua_tls: kwire.lua inside TLS, one pass and -2;
#      stats and lua_stats: the SRT table and stats tree; tls_connections
#      and lua_tls_connections: every connection inside TLS with no TLS hint);
#   3. `make deb`;
# then in a second clean chroot of RELEASE: `apt-get install ./kwire_*.deb`
# and tests/install/smoke.sh (the command, its man pages, tshark listing the
# plugin, kwire.lua from Wireshark's global folder for root and for a user).
#
# The minbase system and the downloaded .debs are cached under
# KWIRE_DISTRO_CACHE (/var/cache/kwire/distro), so a second run downloads
# nothing it has; the chroots themselves are made afresh under OUT_DIR each run.
# Everything the chroot prints goes to OUT_DIR/RELEASE.log; the last line of
# stdout says PASS or FAIL and at which step.
set -Eeuo pipefail

release=${1:?usage: distro_test.sh RELEASE OUT_DIR}
out=${2:?usage: distro_test.sh RELEASE OUT_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
cache=${KWIRE_DISTRO_CACHE:-/var/cache/kwire/distro}
mirror=${KWIRE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
jobs=${JOBS:-$(nproc)}

[ "$(id -u)" -eq 0 ] || { echo "FAIL $release: needs root (debootstrap, chroot)"; exit 1; }
command -v debootstrap >/dev/null || { echo "FAIL $release: debootstrap is missing (tools/install-deps test)"; exit 1; }

# The compiler each release builds with, so that the releases between them
# cover GCC 12 (the host), GCC 14 (trixie), clang 14 (the host's fuzz build)
# and clang 19 (sid).
compiler_of() {
  case "$1" in
    trixie) echo "gcc" ;;
    sid) echo "clang-19" ;;
    *) echo "gcc" ;;
  esac
}
compiler=$(compiler_of "$release")

mkdir -p "$out" "$cache"
log="$out/$release.log"
: > "$log"
work="$out/$release"
step="setup"
started=$SECONDS

mounted=()
cleanup() {
  local m
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    m=${mounted[i]}
    umount -l "$m" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 143' TERM INT
finish() {
  local status=$1
  if [ "$status" -eq 0 ]; then
    echo "PASS $release ($compiler): build, plugin in tshark, .deb install ($((SECONDS - started)) s; log $log)"
  else
    echo "FAIL $release ($compiler) at step '$step' ($((SECONDS - started)) s); the end of $log:"
    tail -n 40 "$log" | sed 's/^/  | /'
  fi
  exit "$status"
}
trap 'finish $?' ERR
say() { echo "== $release: $*" >>"$log"; }

# Removes a chroot made by an earlier run, unmounting first whatever that run
# left mounted in it (a killed run): never delete through a bind mount.
remove_root() {  # remove_root DIR
  local root=$1 m
  [ -e "$root" ] || return 0
  root=$(realpath "$root")
  awk -v r="$root/" 'index($2 "/", r) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m"
  done
  rm -rf --one-file-system "$root"
}
# ---- A minbase system of the release, cached as a tarball ------------------
step="debootstrap"
base="$cache/$release-minbase.tar"
# A week-old base still installs today's packages (apt resolves against fresh
# lists), but sid moves fast enough that an older one is remade.
if [ ! -s "$base" ] || [ -n "$(find "$base" -mtime +7 2>/dev/null)" ]; then
  say "debootstrap --variant=minbase $release from $mirror"
  tmp="$cache/$release-minbase.tmp"
  remove_root "$tmp"
  debootstrap --variant=minbase "$release" "$tmp" "$mirror" >>"$log" 2>&1
  tar -C "$tmp" -cf "$base.part" .
  mv "$base.part" "$base"
  remove_root "$tmp"
fi

# A fresh chroot from the cached base, with /proc, /dev and the shared apt
# archive cache mounted.
make_root() {  # make_root DIR
  local root=$1
  remove_root "$root"
  mkdir -p "$root"
  tar -C "$root" -xf "$base"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # sid's Release file can be past its Valid-Until date on the mirror.
  echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99kwire-test"
  # Keep what apt downloads, for the next run.
  echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >>"$root/etc/apt/apt.conf.d/99kwire-test"
  mkdir -p "$cache/$release-apt/partial"
  mount --bind /proc "$root/proc"; mounted+=("$root/proc")
  mount --bind /dev "$root/dev"; mounted+=("$root/dev")
  mount --bind /dev/pts "$root/dev/pts"; mounted+=("$root/dev/pts")
  mount --bind "$cache/$release-apt" "$root/var/cache/apt/archives"; mounted+=("$root/var/cache/apt/archives")
}
in_root() {  # in_root DIR COMMAND: runs COMMAND (a bash script) in the chroot as root
  local root=$1; shift
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive JOBS="$jobs" /bin/bash -euo pipefail -c "$*" >>"$log" 2>&1
}
unmount_root() {
  cleanup
  mounted=()
}

# ---- 1. install-deps and make build ----------------------------------------
step="copy the source"
root="$work/build-root"
make_root "$root"
mkdir -p "$root/src"
# The working tree as it is (tracked files, with their uncommitted edits).
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$src" ls-files -z | (cd "$src" && tar --null -T - -cf -) | tar -C "$root/src" -xf -
else
  tar -C "$src" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$root/src" -xf -
fi

step="tools/install-deps"
say "tools/install-deps build"
if [ "$compiler" = gcc ]; then
  in_root "$root" "cd /src && tools/install-deps build"
  env_cc=""
else
  in_root "$root" "cd /src && tools/install-deps build $compiler"
  v=${compiler#clang-}
  env_cc="CC=clang-$v CXX=clang++-$v"
fi

step="make build"
say "make build ($compiler, warnings as errors)"
in_root "$root" "cd /src && $env_cc nice -n 10 make build JOBS=$jobs CMAKE_FLAGS=-DKWIRE_WERROR=ON"
in_root "$root" "cd /src && build/kwire --version && build/kwire decode -r captures/demo.pcapng --stats -c 0"

# ---- 2. the plugin in this release's tshark --------------------------------
for t in fields captures filters malformed coexist overlay lua lua_tls stats tls_connections lua_stats lua_tls_connections; do
  step="tests/wireshark $t"
  say "kwire_ws_test.py $t"
  in_root "$root" "cd /src && python3 tests/wireshark/kwire_ws_test.py $t --source /src --kwire build/kwire \
    --plugin build/wireshark/kwire.so --lua build/wireshark/kwire.lua"
done

# ---- 3. the .deb ------------------------------------------------------------
step="make deb"
say "make deb"
in_root "$root" "cd /src && $env_cc nice -n 10 make deb JOBS=$jobs CMAKE_FLAGS=-DKWIRE_WERROR=ON"
deb=$(cd "$root/src" && ls build/kwire_*.deb 2>/dev/null | head -1 || true)
[ -n "$deb" ] || { say "make deb wrote no build/kwire_*.deb"; false; }
cp "$root/src/$deb" "$out/"
debfile=$(basename "$deb")
unmount_root
remove_root "$root"

# ---- 4. the .deb in a clean system ------------------------------------------
step="apt install ./$debfile"
root="$work/install-root"
make_root "$root"
cp "$out/$debfile" "$root/tmp/"
mkdir -p "$root/tmp/kwire-smoke"
cp -r "$src/tests/install/." "$root/tmp/kwire-smoke/"
cp "$src/captures/demo.pcapng" "$root/tmp/kwire-smoke/"
say "apt-get install ./$debfile (with its Recommends, as apt does by default), man-db"
in_root "$root" "apt-get update -q && apt-get install -y -q ./tmp/$debfile man-db"
step="tests/install/smoke.sh"
say "tests/install/smoke.sh"
in_root "$root" "cd /tmp/kwire-smoke && ./smoke.sh --move-plugin --capture /tmp/kwire-smoke/demo.pcapng"
unmount_root
remove_root "$root"
finish 0
