#!/usr/bin/env bash
# Builds supranational's blst (BLS12-381: pairings, RFC 9380 hash-to-curve)
# as a static library for engy's commit-reveal (lib/drand), from the C
# sources the crates.io crate `blst` carries, and installs libblst.a and
# its headers under PREFIX (lib/, include/).  configure finds it with
# --with-blst=PREFIX.  Idempotent: nothing is rebuilt when PREFIX already
# holds this version.
#
#   scripts/build-blst.sh PREFIX
#
# cargo only downloads (cargo fetch --locked against scripts/blst/Cargo.lock,
# which pins the crate and its checksum); the library is compiled here with
# $CC the way blst's own build does it (src/server.c + build/assembly.S),
# position-independent (it ends up inside plugins) and portable (the CPU
# features are detected at run time, so the build runs on any x86-64).
set -euo pipefail
prefix=${1:?usage: build-blst.sh PREFIX}
here=$(cd "$(dirname "$0")" && pwd)
version=$(sed -n 's/^blst = "=\(.*\)"$/\1/p' "$here/blst/Cargo.toml")
stamp="$prefix/.blst-$version"
if [ -f "$stamp" ] && [ -f "$prefix/lib/libblst.a" ] && [ -f "$prefix/include/blst.h" ]; then
  exit 0
fi
command -v cargo >/dev/null 2>&1 || {
  echo "build-blst.sh: cargo is needed to fetch the blst crate (https://rustup.rs)" >&2; exit 1; }
cargo fetch --locked --quiet --manifest-path "$here/blst/Cargo.toml"
src=$(cargo metadata --locked --format-version 1 --manifest-path "$here/blst/Cargo.toml" |
  python3 -c 'import json,sys,os
m = json.load(sys.stdin)
p = [x for x in m["packages"] if x["name"] == "blst"][0]
print(os.path.join(os.path.dirname(p["manifest_path"]), "blst"))')
[ -f "$src/src/server.c" ] && [ -f "$src/bindings/blst.h" ] || {
  echo "build-blst.sh: no blst C sources under $src" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc=${CC:-cc}
flags="-O2 -fPIC -fno-builtin -Wno-unused-function -D__BLST_PORTABLE__"
$cc $flags -c "$src/src/server.c" -o "$work/server.o"
$cc $flags -c "$src/build/assembly.S" -o "$work/assembly.o"
mkdir -p "$prefix/lib" "$prefix/include"
rm -f "$prefix/lib/libblst.a"
ar rcs "$prefix/lib/libblst.a" "$work/server.o" "$work/assembly.o"
cp "$src/bindings/blst.h" "$src/bindings/blst_aux.h" "$prefix/include/"
rm -f "$prefix"/.blst-*
touch "$stamp"
echo "blst $version: $prefix/lib/libblst.a"
