#!/bin/sh
# engyd -t, --plugin-info, --version: every refusal names what is wrong.
# Oracle: behaviour: refusals naming what is wrong, hand-written by the
# test's author. No computed values.
. "$top_srcdir/tests/integration/lib.sh"
# Roles are plugins (role-NAME.so) found in the plugin directory: one
# directory with the test plugins and the built ones.
make_plugin_dir "$T/plug"
TEST_PLUGINS="$T/plug"

expect_ok "--version" "plugin ABI 1.5" "$ENGYD" --version
# The allocator: mimalloc where configure found it, and its malloc the one
# the process runs (--version allocates and asks mimalloc whose the block
# is); the C library's otherwise (sanitizer builds among them).
if grep -q '^#define HAVE_MIMALLOC 1' "$top_builddir/config.h"; then
  expect_ok "--version: mimalloc is the allocator" "allocator: mimalloc " "$ENGYD" --version
  case "$("$ENGYD" --version)" in *"another allocator"*) fail "--version: mimalloc linked but not serving malloc";; esac
else
  expect_ok "--version: the C library's malloc" "allocator: the C library's malloc" "$ENGYD" --version
fi
expect_ok "--help" "engyd -t -c FILE" "$ENGYD" --help
expect_fail "no arguments is a usage error" "usage:" "$ENGYD"

conf() { cat > "$T/$1.conf"; chmod 600 "$T/$1.conf"; }

conf good <<C
role = "validator"
plugin_dir = "$TEST_PLUGINS"
plugin "test-chain" { interval_ms = 200 tags = {"a", "b"} }
C
expect_ok "a valid validator config passes" "ok (role validator, 1 plugin instance)" "$ENGYD" -t -c "$T/good.conf"

conf auditor <<C
role = "auditor"
plugin_dir = "$TEST_PLUGINS"
plugin "test-backend" {}
plugin "test-proof" { level = 3 }
plugin "test-proof:second" {}
plugin "test-scorer" {}
plugin "test-store" {}
C
expect_ok "auditor with two proof instances" "ok (role auditor, 5 plugin instances)" "$ENGYD" -t -c "$T/auditor.conf"

conf unknown_plugin <<C
role = "validator"
plugin_dir = "$TEST_PLUGINS"
plugin "chain-nonexistent" {}
C
expect_fail "unknown plugin is named" "unknown_plugin.conf:3: plugin 'chain-nonexistent': not found" "$ENGYD" -t -c "$T/unknown_plugin.conf"

conf unknown_option <<C
role = "validator"
plugin_dir = "$TEST_PLUGINS"
plugin "test-chain" {
  interval_ms = 100
  colour = "blue"
}
C
expect_fail "unknown plugin option names file, line, option" "unknown_option.conf:5: no such option 'colour'" "$ENGYD" -t -c "$T/unknown_option.conf"

conf unknown_top <<C
role = "validator"
plugin_dir = "$TEST_PLUGINS"
log_levle = "debug"
plugin "test-chain" {}
C
expect_fail "unknown top-level option" "unknown_top.conf:3: no such option 'log_levle'" "$ENGYD" -t -c "$T/unknown_top.conf"

conf unknown_role <<C
role = "minre"
plugin_dir = "$TEST_PLUGINS"
C
expect_fail "unknown role is named" "unknown role 'minre' (roles: auditor, gateway, miner, serve, validator)" "$ENGYD" -t -c "$T/unknown_role.conf"

conf miner_missing <<C
role = "miner"
plugin_dir = "$TEST_PLUGINS"
plugin "test-transport" {}
C
expect_fail "a role lacking kinds says which" "role miner needs at least 1 backend plugin" "$ENGYD" -t -c "$T/miner_missing.conf"
case "$out" in *"needs at least 1 proof plugin"*) ok "and every missing kind";; *) fail "proof kind not reported: $out";; esac

conf two_chains <<C
role = "validator"
plugin_dir = "$TEST_PLUGINS"
plugin "test-chain" {}
plugin "test-chain2" {}
C
expect_fail "too many of a kind" "role validator takes at most 1 chain plugin" "$ENGYD" -t -c "$T/two_chains.conf"

conf unused_kind <<C
role = "validator"
plugin_dir = "$TEST_PLUGINS"
plugin "test-chain" {}
plugin "test-store" {}
C
expect_fail "a kind the role does not use" "role validator has no use for store plugin \"test-store\"" "$ENGYD" -t -c "$T/unused_kind.conf"

conf range <<C
role = "validator"
plugin_dir = "$TEST_PLUGINS"
plugin "test-chain" { interval_ms = 0 }
C
expect_fail "out-of-range option" "option 'interval_ms' = 0 is out of range 1..60000" "$ENGYD" -t -c "$T/range.conf"

conf create_rejects <<C
role = "validator"
plugin_dir = "$TEST_PLUGINS"
plugin "test-chain" { ratio = 2.5 }
C
expect_fail "create() validation fails -t" "plugin \"test-chain\": create failed: Invalid argument" "$ENGYD" -t -c "$T/create_rejects.conf"
case "$out" in *"must be in 0..1"*) ok "and the plugin says why";; *) fail "plugin reason missing: $out";; esac

# Every broken plugin is refused with its own reason.
for pair in "bad-magic|bad magic 0xdeadbeef" \
            "bad-major|built for plugin ABI 2.5" \
            "newer-minor|built for plugin ABI 1.6, newer than this engyd's 1.5: upgrade engyd" \
            "short-size|descriptor of 24 bytes" \
            "bad-kind|unknown kind 99" \
            "missing-op|missing required proof op 'verify'" \
            "half-challenge|missing required proof op 'check'" \
            "no-destroy|missing required op 'destroy'" \
            "no-symbol|does not export 'engy_plugin'" \
            "name-mismatch|calls itself 'other-name'"; do
  name=${pair%%|*}; reason=${pair#*|}
  conf "broken-$name" <<C
role = "auditor"
plugin_dir = "$TEST_PLUGINS"
plugin "test-backend" {}
plugin "$name" {}
plugin "test-scorer" {}
plugin "test-store" {}
C
  expect_fail "broken plugin $name refused" "$reason" "$ENGYD" -t -c "$T/broken-$name.conf"
  case "$out" in *"broken-$name.conf:4: plugin '$name': "*) ;; *) fail "$name: refusal does not name the plugin: $out";; esac
done

printf 'not an ELF\n' > "$T/textfile.so"
expect_fail "--plugin-info on a non-shared-object" "not a shared object" "$ENGYD" --plugin-info "$T/textfile.so"
expect_ok "--plugin-info prints the descriptor" "interval_ms  integer  default=100" "$ENGYD" --plugin-info "$TEST_PLUGINS/test-chain.so"
case "$out" in *"token  string  secret  env=TEST_CHAIN_TOKEN"*) ok "--plugin-info marks secrets";; *) fail "secret not shown: $out";; esac
expect_fail "--plugin-info refuses bad major" "rebuild the plugin" "$ENGYD" --plugin-info "$TEST_PLUGINS/bad-major.so"

# The shipped configs: accepted when their plugins exist in this tree,
# otherwise refused with the missing plugin named.  Configs that name a
# checkpoint take it from the environment, as an operator's would: a tiny
# generated one.
make_plugin_dir "$T/plugins"
if "$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 1 --out "$T/model" >/dev/null 2>&1; then
  export ENGY_REF_CHECKPOINT="$T/model"
fi
for f in "$top_srcdir"/etc/*.conf; do
  missing=""
  for p in $(sed -n 's/^[[:space:]]*plugin[[:space:]]*"\([^":]*\).*/\1/p' "$f"); do
    [ -e "$T/plugins/$p.so" ] || missing="$missing $p"
  done
  if [ -z "$missing" ]; then
    # --no-dlclose: libraries a plugin links (CUDA's) leave allocations
    # that a leak checker misreads once the plugin is unloaded.
    expect_ok "etc/$(basename "$f") is accepted" ": ok (role" env ENGY_PLUGIN_DIR="$T/plugins" "$ENGYD" --no-dlclose -t -c "$f"
  else
    first=${missing# }; first=${first%% *}
    expect_fail "etc/$(basename "$f") names its missing plugin" "plugin '$first': not found" env ENGY_PLUGIN_DIR="$T/plugins" "$ENGYD" -t -c "$f"
  fi
done
echo "$N_OK passed, 0 failed"
