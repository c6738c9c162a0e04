#!/bin/sh
# SPDX-License-Identifier: MIT
# engyctl doctor and engyd -t on miner and validator configs: a healthy
# setup passes; each deliberately broken one fails with a message naming
# the setting to fix.  Peers on 127.0.0.1: engy's own gateway (GET
# /gw/meta), fake_sglang.mjs (an sglang serve, with hidden states on, off
# or missing), and closed ports.
# Oracle: behaviour: each deliberately broken config must name its setting;
# peers are engy's gateway and fake_sglang.mjs. No computed values.
. "$top_srcdir/tests/integration/lib.sh"
command -v node >/dev/null || fail "node is required (fake_sglang.mjs)"
make_plugin_dir "$T/plug"
for p in transport-ws transport-http backend-sglang verifier-toploc \
	store-sqlite chain-subtensor chain-dev role-miner role-validator \
	role-gateway; do
	[ -f "$T/plug/$p.so" ] || fail "$p.so was not built"
done
export ENGY_PLUGIN_DIR="$T/plug"
unset GW MINER_KEY MODEL SERVE_URL CHECKPOINT ENGY_CHECKPOINT \
	ENGY_INSTANCE_ID ENGY_WORKER_NAME ENGY_GW_WORKERS ENGY_SN53_NETWORK \
	ENGY_SN53_CHAIN_ENDPOINT ENGY_SN53_API ENGY_SN53_MASTER_HOTKEY \
	ENGY_SN53_WALLET ENGY_SN53_WALLET_HOTKEY BT_WALLET_PATH
CLOSED=http://127.0.0.1:9     # the discard port: nothing listens

# --- peers ---------------------------------------------------------------
FAKE="$top_srcdir/tests/integration/fake_sglang.mjs"
serve() {  # name default-modes: sets <name>_URL
	node "$FAKE" serve "$T/$1.port" 8 "$2" 2> "$T/$1.err" &
	PIDS="$PIDS $!"
	i=0
	while [ ! -s "$T/$1.port" ]; do
		i=$((i + 1)); [ $i -le 200 ] || fail "fake serve $1 did not start: $(cat "$T/$1.err")"
		sleep 0.05
	done
	eval "$1_URL=http://127.0.0.1:$(cat "$T/$1.port")"
}
serve good ""
serve hsoff hsoff
serve nohidden nohidden

mkdir -p "$T/gw"
cat > "$T/gw.conf" <<C
role = "gateway"
state_dir = "$T/gw"
log_file = "$T/gw.log"
plugin "transport-http" { listen = { "127.0.0.1:0" } }
plugin "transport-ws" { listen = "127.0.0.1:0" }
plugin "store-sqlite" { path = "$T/gw/engy.db" }
C
ENGY_KEY_PEPPER=doctor-test-pepper-0123456789 "$ENGYD" -c "$T/gw.conf" 2> "$T/gw.stderr" &
PIDS="$PIDS $!"
wait_for "$T/gw.log" "event=ready" 60 || fail "gateway did not start: $(cat "$T/gw.log" "$T/gw.stderr")"
WSPORT=$(sed -n 's/.*event=ws_listen addr=127.0.0.1:\([0-9]*\).*/\1/p' "$T/gw.log" | tail -1)
[ -n "$WSPORT" ] || fail "no gateway port in $(cat "$T/gw.log")"
GOOD_GW="ws://127.0.0.1:$WSPORT/gw"

# A checkpoint directory as the miner reads it (files present).
mkdir -p "$T/ckpt"
echo '{"hidden_size":8,"vocab_size":300,"max_position_embeddings":4096}' > "$T/ckpt/config.json"
echo '{}' > "$T/ckpt/tokenizer.json"
mkdir -p "$T/notok"
cp "$T/ckpt/config.json" "$T/notok/"

cat > "$T/miner.conf" <<C
role = "miner"
state_dir = "$T/miner"
miner { gw = "wss://api.engy.ai/gw" }
plugin "transport-ws" { }
plugin "backend-sglang" { }
plugin "verifier-toploc" { }
C

# doctor_case "what" "needle" [VAR=value ...]: doctor must fail naming it.
doctor_fails() {
	what=$1; needle=$2; shift 2
	expect_fail "doctor: $what" "$needle" env "$@" "$ENGYCTL" doctor "$T/miner.conf"
}
GOOD="GW=$GOOD_GW MINER_KEY=test-key SERVE_URL=$good_URL CHECKPOINT=$T/ckpt"

# shellcheck disable=SC2086
expect_ok "doctor: a healthy miner setup has nothing to fix" "0 problems, 0 warnings" \
	env $GOOD "$ENGYCTL" doctor "$T/miner.conf"
# shellcheck disable=SC2086
out=$(env $GOOD "$ENGYCTL" doctor "$T/miner.conf")
case "$out" in *"says 1 worker"*) ;; *) fail "doctor did not read the gateway's /meta: $out";; esac
case "$out" in *"serves /models/Fake-Model-1B, hidden states on"*) ;; *) fail "doctor did not probe the serve: $out";; esac
case "$out" in *"test-key"*) fail "doctor printed the miner key: $out";; esac
ok "doctor reports the gateway's workers and the serve's model with hidden states, never the key"

# The matrix: one thing broken at a time, each message names its fix.
# shellcheck disable=SC2086
doctor_fails "serve down names SERVE_URL" "set SERVE_URL (--serve-url) to where it listens" \
	$GOOD SERVE_URL=$CLOSED
# shellcheck disable=SC2086
doctor_fails "a serve refusing hidden states" "restart the serve with --enable-return-hidden-states" \
	$GOOD SERVE_URL=$hsoff_URL
# shellcheck disable=SC2086
doctor_fails "a serve answering without hidden states" "returns no hidden states (a /generate answer without them)" \
	$GOOD SERVE_URL=$nohidden_URL
# shellcheck disable=SC2086
doctor_fails "the second of two serves down" "http://127.0.0.1:9: cannot connect" \
	$GOOD "SERVE_URL=$good_URL,$CLOSED"
# shellcheck disable=SC2086
doctor_fails "a URL that is not a serve" "SERVE_URL must be an sglang serve's base URL" \
	$GOOD "SERVE_URL=http://127.0.0.1:$WSPORT"
# shellcheck disable=SC2086
doctor_fails "gateway unreachable names GW" "check GW (wss://<gateway-host>/gw" \
	$GOOD GW=ws://127.0.0.1:9/gw
# shellcheck disable=SC2086
doctor_fails "no miner key names MINER_KEY" "set MINER_KEY" \
	$GOOD MINER_KEY=
# shellcheck disable=SC2086
doctor_fails "a missing checkpoint names CHECKPOINT" "set CHECKPOINT (or --checkpoint)" \
	$GOOD CHECKPOINT=$T/nowhere
# shellcheck disable=SC2086
doctor_fails "a checkpoint without its tokenizer" "no readable tokenizer.json in it" \
	$GOOD CHECKPOINT=$T/notok
# shellcheck disable=SC2086
doctor_fails "no checkpoint and the serve's model_path not here" \
	"the serve's model_path /models/Fake-Model-1B has no readable tokenizer.json on this machine" \
	$GOOD CHECKPOINT=
# shellcheck disable=SC2086
good_port=${good_URL##*:}
# shellcheck disable=SC2086
out=$(env $GOOD GW=ws://127.0.0.1:$good_port/gw "$ENGYCTL" doctor "$T/miner.conf" 2>&1) ||
	fail "a gateway without /meta is a warning, not a failure: $out"
case "$out" in *"warn  gateway"*"set ENGY_GW_WORKERS"*"0 problems, 1 warning"*) ;; *) fail "no /meta warning: $out";; esac
ok "doctor: a gateway without /meta is a warning that says the miner plans for 1 worker"

# engyd -t: the same findings without connecting.
# shellcheck disable=SC2086
expect_ok "engyd -t says what the miner would connect to" \
	"serve: $good_URL (\$SERVE_URL)" env $GOOD "$ENGYD" -t -c "$T/miner.conf"
# shellcheck disable=SC2086
expect_ok "engyd -t names the checkpoint's source" \
	"checkpoint: $T/ckpt (\$CHECKPOINT)" env $GOOD "$ENGYD" -t -c "$T/miner.conf"
# shellcheck disable=SC2086
expect_fail "engyd -t: a checkpoint without a tokenizer fails the test" \
	"checkpoint: fix: set CHECKPOINT" env $GOOD CHECKPOINT=$T/notok "$ENGYD" -t -c "$T/miner.conf"
# shellcheck disable=SC2086
expect_ok "engyd -t: no key is a warning naming MINER_KEY (it may come at start)" \
	"miner key: not set (MINER_KEY unset): warning: no miner key" \
	env $GOOD MINER_KEY= "$ENGYD" -t -c "$T/miner.conf"

# --- validator -----------------------------------------------------------
mkdir -p "$T/wallets/w/hotkeys"
"$ENGYCTL" keys new --out "$T/wallets/w/hotkeys/h" > /dev/null
cat > "$T/validator.conf" <<C
role = "validator"
state_dir = "$T/val"
validator { wallet_path = "$T/wallets" }
plugin "chain-subtensor" { }
C
VGOOD="ENGY_SN53_WALLET=w ENGY_SN53_WALLET_HOTKEY=h ENGY_SN53_API=$CLOSED ENGY_SN53_MASTER_HOTKEY=5DXSBCCKH5ENuyHFNaAvtaMfbhEEWpjSJB4rzc4mJfsc1uvJ ENGY_SN53_CHAIN_ENDPOINT=$CLOSED"
vfails() {
	what=$1; needle=$2; shift 2
	expect_fail "doctor: $what" "$needle" env "$@" "$ENGYCTL" doctor "$T/validator.conf"
}
# shellcheck disable=SC2086
vfails "provider unreachable names ENGY_SN53_API" "fix: set ENGY_SN53_API (and ENGY_SN53_MASTER_HOTKEY with it)" $VGOOD
# shellcheck disable=SC2086
vfails "chain unreachable names ENGY_SN53_NETWORK and ENGY_SN53_CHAIN_ENDPOINT" \
	"fix: set ENGY_SN53_NETWORK (finney, test, local) or ENGY_SN53_CHAIN_ENDPOINT" $VGOOD
# shellcheck disable=SC2086
vfails "a provider URL that answers something else" "ENGY_SN53_API must be the provider's base URL" \
	$VGOOD ENGY_SN53_API=$good_URL
# shellcheck disable=SC2086
vfails "a wrong hotkey name" "check ENGY_SN53_WALLET and ENGY_SN53_WALLET_HOTKEY against btcli wallet list" \
	$VGOOD ENGY_SN53_WALLET_HOTKEY=nope
# shellcheck disable=SC2086
vfails "no wallet named" "set ENGY_SN53_WALLET and ENGY_SN53_WALLET_HOTKEY to the names btcli wallet list shows" \
	$VGOOD ENGY_SN53_WALLET=
# shellcheck disable=SC2086
vfails "an unknown network" "set ENGY_SN53_NETWORK to finney, test, local, archive" \
	$VGOOD ENGY_SN53_CHAIN_ENDPOINT= ENGY_SN53_NETWORK=mainnet
out=$(env ENGY_SN53_WALLET=w ENGY_SN53_WALLET_HOTKEY=h "$ENGYCTL" doctor "$T/validator.conf" 2>&1) || true
case "$out" in *"ok    wallet: $T/wallets/w/hotkeys/h"*) ;; *) fail "the good hotkey is not ok: $out";; esac
ok "doctor: a loadable hotkey is ok"

# The network twin: names map to endpoints; the endpoint twin wins.
expect_ok "ENGY_SN53_NETWORK=test maps to the test chain" \
	"chain: wss://test.finney.opentensor.ai:443 (\$ENGY_SN53_NETWORK=test)" \
	env ENGY_SN53_NETWORK=test "$ENGYD" -t -c "$T/validator.conf"
expect_ok "ENGY_SN53_NETWORK=local maps to a local node" \
	"chain: ws://127.0.0.1:9944 (\$ENGY_SN53_NETWORK=local)" \
	env ENGY_SN53_NETWORK=local "$ENGYD" -t -c "$T/validator.conf"
expect_ok "finney is the default" "chain: wss://entrypoint-finney.opentensor.ai:443 (network finney)" \
	"$ENGYD" -t -c "$T/validator.conf"
expect_ok "ENGY_SN53_CHAIN_ENDPOINT wins over ENGY_SN53_NETWORK" \
	"chain: ws://10.0.0.1:9944 (\$ENGY_SN53_CHAIN_ENDPOINT)" \
	env ENGY_SN53_NETWORK=test ENGY_SN53_CHAIN_ENDPOINT=ws://10.0.0.1:9944 "$ENGYD" -t -c "$T/validator.conf"
sed 's|plugin "chain-subtensor" { }|plugin "chain-subtensor" { endpoint = "ws://10.0.0.2:9944" }|' \
	"$T/validator.conf" > "$T/validator-ep.conf"
expect_ok "the config's endpoint wins over the default network" \
	"chain: ws://10.0.0.2:9944 (config chain-subtensor endpoint)" "$ENGYD" -t -c "$T/validator-ep.conf"
expect_ok "ENGY_SN53_NETWORK (environment) wins over the config's endpoint" \
	"chain: wss://test.finney.opentensor.ai:443 (\$ENGY_SN53_NETWORK=test)" \
	env ENGY_SN53_NETWORK=test "$ENGYD" -t -c "$T/validator-ep.conf"
echo "1..$N_OK"
