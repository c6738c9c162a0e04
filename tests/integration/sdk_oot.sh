#!/bin/sh
# The installed SDK builds a plugin out of tree with pkg-config, and engyd
# loads it: headers + engy.pc are installed into a scratch DESTDIR.
# Oracle: behaviour: pkg-config and the installed headers build a plugin
# engyd loads. No computed values.
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
H="$top_srcdir/include/engy/plugin.h"
ABI=$(sed -n 's/^#define ENGY_ABI_MAJOR[[:space:]]*\([0-9]*\).*/\1/p' "$H").$(sed -n 's/^#define ENGY_ABI_MINOR[[:space:]]*\([0-9]*\).*/\1/p' "$H")
[ "$(pkg-config --variable=abi engy)" = "$ABI" ] || fail "abi variable: $(pkg-config --variable=abi engy), the header's $ABI"
ok "engy.pc carries the ABI version"
cflags=$(pkg-config --cflags engy)
case "$cflags" in *"$T/root"*) ;; *) fail "cflags do not point into the install: $cflags";; esac
mkdir -p "$T/plugins"
make -s -C "$top_srcdir/tests/oot" OUT="$T/plugins" CC="${CC:-cc}" > "$T/build.log" 2>&1 ||
  fail "out-of-tree build: $(cat "$T/build.log")"
[ -f "$T/plugins/oot-proof.so" ] || fail "no oot-proof.so"
[ -f "$T/plugins/role-oot.so" ] || fail "no role-oot.so"
ok "out-of-tree plugins (a proof and a role) build with pkg-config"
expect_ok "--plugin-info reads it" "name: oot-proof" "$ENGYD" --plugin-info "$T/plugins/oot-proof.so"
case "$out" in *"kind: proof"*"abi: $ABI"*"seed  integer  default=7"*) ok "its descriptor is complete";; *) fail "descriptor: $out";; esac
for p in test-backend test-scorer test-store; do ln -s "$TEST_PLUGINS/$p.so" "$T/plugins/$p.so"; done
ln -s "$top_builddir/plugins/role-auditor/.libs/role-auditor.so" "$T/plugins/role-auditor.so"
cat > "$T/oot.conf" <<C
role = "auditor"
plugin_dir = "$T/plugins"
plugin "test-backend" {}
plugin "oot-proof" { seed = 42 }
plugin "test-scorer" {}
plugin "test-store" {}
C
expect_ok "engyd -t loads it in a role" "ok (role auditor, 4 plugin instances)" "$ENGYD" -t -c "$T/oot.conf"

# A third party's role: loaded by role = "oot" from the same directory,
# its needs checked, its option read, its peers enumerated; it stops
# engyd through the host with its own exit code after one drain poll.
expect_ok "--plugin-info reads the role" "kind: role" "$ENGYD" --plugin-info "$T/plugins/role-oot.so"
cat > "$T/role.conf" <<C
role = "oot"
plugin_dir = "$T/plugins"
state_dir = "$T/state"
oot { exit_code = 7 }
plugin "oot-proof" { seed = 3 }
C
expect_ok "engyd -t accepts the out-of-tree role" "ok (role oot, 1 plugin instance)" "$ENGYD" -t -c "$T/role.conf"
cat > "$T/role2.conf" <<C
role = "oot"
plugin_dir = "$T/plugins"
oot { exit_code = 7 }
plugin "oot-proof" {}
plugin "oot-proof:second" {}
C
expect_fail "the role's needs are enforced" "role oot takes at most 1 proof plugin" "$ENGYD" -t -c "$T/role2.conf"
rc=0
"$ENGYD" -c "$T/role.conf" > "$T/role.log" 2>&1 || rc=$?
[ "$rc" = 7 ] || fail "the role's shutdown(7) made engyd exit $rc: $(cat "$T/role.log")"
grep -q 'event=oot_peer index=0 instance=oot-proof plugin=oot-proof kind=3' "$T/role.log" ||
  fail "peer_at() did not list oot-proof: $(cat "$T/role.log")"
grep -q 'event=oot_wired peers=1 scheme=' "$T/role.log" || fail "no oot_wired: $(cat "$T/role.log")"
grep -q 'event=drained' "$T/role.log" || fail "the drain did not finish: $(cat "$T/role.log")"
ok "engyd runs the out-of-tree role, which lists its peers and stops the host with exit 7"
echo "$N_OK passed, 0 failed"
