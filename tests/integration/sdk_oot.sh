#!/bin/sh
# The installed SDK builds a plugin out of tree with pkg-config, and engyd
# loads it: headers + engy.pc are installed into a scratch DESTDIR.
. "$top_srcdir/tests/integration/lib.sh"
unset MAKEFLAGS MFLAGS MAKELEVEL
make -s -C "$top_builddir" DESTDIR="$T/root" \
  install-engyincludeHEADERS install-pkgconfigDATA > "$T/install.log" 2>&1 ||
  fail "SDK install: $(cat "$T/install.log")"
pc=$(find "$T/root" -name engy.pc | head -1)
[ -n "$pc" ] || fail "engy.pc not installed"
ok "SDK headers and engy.pc install"
export PKG_CONFIG_PATH="$(dirname "$pc")" PKG_CONFIG_SYSROOT_DIR="$T/root"
pkg-config --exists engy || fail "pkg-config does not find engy"
pdir=$(pkg-config --variable=plugindir engy)
case "$pdir" in */engy/plugins) ok "engy.pc carries plugindir ($pdir)";; *) fail "plugindir: $pdir";; esac
[ "$(pkg-config --variable=abi engy)" = 1.0 ] || fail "abi variable"
ok "engy.pc carries the ABI version"
cflags=$(pkg-config --cflags engy)
case "$cflags" in *"$T/root"*) ;; *) fail "cflags do not point into the install: $cflags";; esac
mkdir -p "$T/plugins"
make -s -C "$top_srcdir/tests/oot" OUT="$T/plugins" CC="${CC:-cc}" > "$T/build.log" 2>&1 ||
  fail "out-of-tree build: $(cat "$T/build.log")"
[ -f "$T/plugins/oot-proof.so" ] || fail "no oot-proof.so"
ok "out-of-tree plugin builds with pkg-config"
expect_ok "--plugin-info reads it" "name: oot-proof" "$ENGYD" --plugin-info "$T/plugins/oot-proof.so"
case "$out" in *"kind: proof"*"abi: 1.0"*"seed  integer  default=7"*) ok "its descriptor is complete";; *) fail "descriptor: $out";; esac
for p in test-backend test-scorer test-store; do ln -s "$TEST_PLUGINS/$p.so" "$T/plugins/$p.so"; done
cat > "$T/oot.conf" <<C
role = "auditor"
plugin_dir = "$T/plugins"
plugin "test-backend" {}
plugin "oot-proof" { seed = 42 }
plugin "test-scorer" {}
plugin "test-store" {}
C
expect_ok "engyd -t loads it in a role" "ok (role auditor, 4 plugin instances)" "$ENGYD" -t -c "$T/oot.conf"
echo "$N_OK passed, 0 failed"
