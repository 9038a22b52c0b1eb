#!/usr/bin/env bash
# Installs heir's .deb (scripts/build-deb.sh) with dpkg on this machine,
# uses it as a user who never built heir would — from /usr, with no
# environment variables: the demo, a C program built with pkg-config alone
# from the multiarch directory, `heir exec`, the man pages — then removes
# it and checks that nothing is left.
#
# It changes the machine's root (dpkg -i, then dpkg --purge), so it runs
# only as root, and only where heir is not already installed some other way
# (a /usr/bin/heir or libheir.so.1 that the package does not own: refused).
# test.sh runs it under CI=true (a fresh VM), elsewhere with
# HEIR_TEST_DEB=1.
#
# Usage: scripts/test-deb.sh [DEB]   (default: builds it)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

if [ "$(id -u)" != 0 ]; then
    echo "test-deb: needs root (dpkg -i)" >&2
    exit 1
fi
deb=${1:-$(scripts/build-deb.sh | tail -n1)}
deb=$(realpath "$deb")
if ! dpkg -s heir >/dev/null 2>&1; then
    for f in /usr/bin/heir /usr/local/bin/heir; do
        if [ -e "$f" ]; then
            echo "test-deb: $f exists and is not from the heir package: not installing over it" >&2
            exit 1
        fi
    done
fi

work=$(mktemp -d)
cleanup() {
    dpkg --purge heir >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

echo "test-deb: dpkg -i $(basename "$deb")"
dpkg -i "$deb" >/dev/null
fail() { echo "test-deb: FAILED: $*" >&2; exit 1; }

cd "$work"
# A login shell's PATH, nothing of the build tree.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
unset LD_LIBRARY_PATH PKG_CONFIG_PATH HEIR_PRELOAD HEIR_BIN || true

[ "$(command -v heir)" = /usr/bin/heir ] || fail "heir is not /usr/bin/heir"
heir --version | grep -q "^heir " || fail "heir --version"

echo "test-deb: heir demo --real-seconds 0"
heir demo --real-seconds 0 >demo.txt 2>demo.err || { cat demo.err >&2; fail "heir demo"; }
grep -q "PI-CV" demo.txt || fail "the demo's table"
[ -s heir-demo/report.html ] || fail "the demo's report page"

echo "test-deb: a C program built with pkg-config alone"
pkg-config --modversion heir | grep -qx "$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -n1)" \
    || fail "pkg-config does not find heir"
# shellcheck disable=SC2046
cc "$repo/examples/c/producer_consumer.c" $(pkg-config --cflags --libs heir) -o pc \
    || fail "cc with pkg-config's flags"
# The soname: libheir.so.MAJOR of the library's own version
# (crates/heir-rt/Cargo.toml, [package.metadata.capi.library]).
libversion=$(sed -n '/^\[package\.metadata\.capi\.library\]/,/^\[/s/^version = "\(.*\)"/\1/p' \
    "$repo/crates/heir-rt/Cargo.toml")
soname=libheir.so.${libversion%%.*}
dpkg -L heir | grep -qx "/usr/lib/[^/]*/libheir\.so\.$libversion" || fail "the package has no libheir.so.$libversion"
readelf -d ./pc | grep -qF "Shared library: [$soname]" || fail "pc does not record the soname $soname"
ldd ./pc | grep -Eq "^\s*$soname => (/usr)?/lib/[^ ]*/$soname " \
    || fail "pc is not linked against the installed $soname (ldconfig trigger?)"
timeout 60 ./pc >pc.out 2>&1 || { cat pc.out >&2; fail "the producer/consumer example"; }

echo "test-deb: heir exec finds its library"
timeout 60 heir exec --json -- /bin/true >exec.json 2>exec.err || { cat exec.err >&2; fail "heir exec"; }
grep -Eq '"preload":"/usr/lib/[^"]*/heir/libheir_preload.so"' exec.json \
    || fail "heir exec did not take the installed libheir_preload.so"
# The program reported back: the library was loaded into it.
grep -q '"processes":\[{"pid"' exec.json || fail "the library did not load into /bin/true"

echo "test-deb: man pages and completions"
for sub in "" -sim -run -analyze -exec; do
    [ -s "/usr/share/man/man1/heir$sub.1.gz" ] || fail "man page heir$sub.1"
done
zcat /usr/share/man/man1/heir-run.1.gz | grep -q -- "partition" || fail "heir-run.1 documents --partition"
[ -s /usr/share/bash-completion/completions/heir ] || fail "bash completions"

echo "test-deb: dpkg --purge heir"
dpkg --purge heir >/dev/null
for f in /usr/bin/heir /usr/include/heir.h /usr/share/man/man1/heir.1.gz; do
    [ ! -e "$f" ] || fail "$f left after removal"
done
! ls /usr/lib/*/libheir.so* >/dev/null 2>&1 || fail "libheir left after removal"
! ldconfig -p | grep -q libheir.so || fail "ldconfig still lists libheir after removal"
echo "test-deb: ok ($(basename "$deb"): installed, used, removed)"
