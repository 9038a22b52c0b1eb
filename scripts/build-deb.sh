#!/usr/bin/env bash
# Builds heir's Debian package, target/deb/heir_VERSION_ARCH.deb, with the
# distribution's own tools (dpkg-deb, dpkg-shlibdeps): no cargo-deb to
# build first. It holds
#   /usr/bin/heir                                   the CLI (release build)
#   /usr/lib/MULTIARCH/libheir.so.1.0.0, .so.1      libheir (soname libheir.so.1)
#   /usr/lib/MULTIARCH/libheir.so, libheir.a        for -lheir
#   /usr/lib/MULTIARCH/pkgconfig/heir.pc, /usr/include/heir.h
#   /usr/lib/MULTIARCH/heir/libheir_preload.so      heir exec's interposition library
#   /usr/share/man/man1/heir.1.gz, heir-SUB.1.gz    one page per subcommand
#   bash, zsh and fish completions
#   /usr/share/doc/heir/{README.md,docs,examples,copyright}
# libheir is installed by cargo-c exactly as `cargo cinstall --prefix /usr`
# installs it (docs/RUNTIME.md), into a staging root. ldconfig runs on
# installation (the package activates libc-bin's ldconfig trigger).
#
# Usage: scripts/build-deb.sh            prints the .deb's path last
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
# libheir's own (ABI) version, not the package's: the file is
# libheir.so.$libversion, its soname libheir.so.${libversion%%.*}
# (crates/heir-rt/Cargo.toml, [package.metadata.capi.library]).
libversion=$(sed -n '/^\[package\.metadata\.capi\.library\]/,/^\[/s/^version = "\(.*\)"/\1/p' \
    crates/heir-rt/Cargo.toml)
[ -n "$libversion" ] || { echo "build-deb: no library version in crates/heir-rt/Cargo.toml" >&2; exit 1; }
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
out=target/deb
stage=$out/heir_${version}_${arch}
rm -rf "$stage"
mkdir -p "$stage/DEBIAN"

echo "build-deb: release build of heir and libheir_preload.so" >&2
cargo build --release --locked --quiet -p heir-cli -p heir-preload
echo "build-deb: libheir (cargo cinstall --prefix /usr)" >&2
# The same target directory as heir-rt's cinstall test: built once. The
# multiarch libdir is given: Debian 12's cargo-c (0.9.14) would use /usr/lib;
# CARGO_UNSTABLE_SPARSE_REGISTRY lets it read crates.io's sparse index (see
# test.sh); cargo-c 0.10 ignores it.
CARGO_UNSTABLE_SPARSE_REGISTRY=true \
    cargo cinstall --release --locked -p heir-rt --prefix /usr \
    --libdir "/usr/lib/$multiarch" \
    --destdir "$stage" --target-dir target/cinstall >/dev/null

install -Dm755 target/release/heir "$stage/usr/bin/heir"
install -Dm644 target/release/libheir_preload.so \
    "$stage/usr/lib/$multiarch/heir/libheir_preload.so"
strip --strip-unneeded "$stage/usr/bin/heir" \
    "$stage/usr/lib/$multiarch/heir/libheir_preload.so" \
    "$stage/usr/lib/$multiarch/libheir.so.$libversion"

man=$stage/usr/share/man/man1
target/release/heir man "$man" >/dev/null
gzip -9n "$man"/*.1
target/release/heir completions bash \
    | install -Dm644 /dev/stdin "$stage/usr/share/bash-completion/completions/heir"
target/release/heir completions zsh \
    | install -Dm644 /dev/stdin "$stage/usr/share/zsh/vendor-completions/_heir"
target/release/heir completions fish \
    | install -Dm644 /dev/stdin "$stage/usr/share/fish/vendor_completions.d/heir.fish"

doc=$stage/usr/share/doc/heir
install -Dm644 README.md "$doc/README.md"
mkdir -p "$doc/docs" "$doc/examples"
cp docs/*.md "$doc/docs/"
cp examples/*.json "$doc/examples/"
cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: heir

Files: *
Copyright: the heir developers
License: MIT or Apache-2.0
 On Debian systems the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0.
EOF

# Shared-library dependencies as Debian computes them (dpkg-shlibdeps
# reads a source package's debian/control: a minimal one, in a scratch
# directory).
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/debian"
printf 'Source: heir\n\nPackage: heir\nArchitecture: any\n' >"$scratch/debian/control"
abs_stage=$(cd "$stage" && pwd)
depends=$(cd "$scratch" && dpkg-shlibdeps -O -l"$abs_stage/usr/lib/$multiarch" \
    "$abs_stage/usr/bin/heir" "$abs_stage/usr/lib/$multiarch/libheir.so.$libversion" \
    "$abs_stage/usr/lib/$multiarch/heir/libheir_preload.so" 2>/dev/null \
    | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || depends="libc6"

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<EOF
Package: heir
Version: $version
Architecture: $arch
Maintainer: heir developers <heir@localhost>
Installed-Size: $size
Depends: $depends
Recommends: rt-tests, trace-cmd
Section: devel
Priority: optional
Description: priority inheritance beyond mutexes for real-time Linux
 heir simulates, runs on real SCHED_FIFO/SCHED_DEADLINE threads and
 analyses one rt-app scenario file: PI condition variables with helpers,
 multiprocessor bandwidth inheritance, timeslice donation over IPC, gang
 priority management for barriers and immediate priority ceilings.
 .
 The package holds the heir command (with man pages and completions),
 libheir (heir.h, heir.pc) and heir exec's interposition library.
EOF
# ldconfig after installation and removal (libheir.so.1 in the multiarch
# directory): libc-bin's trigger.
echo "activate-noawait ldconfig" >"$stage/DEBIAN/triggers"
(cd "$stage" && find usr -type f -exec md5sum {} + | sort -k2 >DEBIAN/md5sums)

deb=$out/heir_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
