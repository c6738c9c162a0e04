#!/bin/sh
# SPDX-License-Identifier: MIT
# engy as an operator runs it: the systemd units pass systemd-analyze verify
# and install with make install; the public miner's documented command line
# (engy-miner --checkpoint DIR --serve-url URL,URL with GW, MINER_KEY,
# MODEL, MAX_INFLIGHT) and the public validator's .env.validator, unchanged,
# start engyd; READY=1, WATCHDOG=1 and STOPPING=1 reach $NOTIFY_SOCKET.
# Peers on 127.0.0.1: engy's gateway, fake_sglang.mjs serves, a datagram
# socket bound as systemd binds it (python3).
# Oracle: systemd-analyze verify for the units, a datagram socket for
# sd_notify; the command lines are the documented ones. No computed values.
. "$top_srcdir/tests/integration/lib.sh"
command -v node >/dev/null || fail "node is required (fake_sglang.mjs)"
command -v python3 >/dev/null || fail "python3 is required (the notify socket)"
make_plugin_dir "$T/plug"
export ENGY_PLUGIN_DIR="$T/plug"
unset GW MINER_KEY MODEL MAX_INFLIGHT SERVE_URL CHECKPOINT ENGY_CHECKPOINT \
	ENGY_INSTANCE_ID ENGY_WORKER_NAME ENGY_GW_WORKERS ENGY_SN53_NETWORK \
	ENGY_SN53_CHAIN_ENDPOINT ENGY_SN53_API ENGY_SN53_MASTER_HOTKEY \
	ENGY_SN53_WALLET ENGY_SN53_WALLET_HOTKEY BT_WALLET_PATH NOTIFY_SOCKET \
	WATCHDOG_USEC ENGY_SN53_STATE_FILE ENGY_SN53_HEARTBEAT_FILE \
	ENGY_SN53_NETUID ENGY_SN53_POLL_S
MINER_SH="$top_builddir/tools/engy-miner"
VALIDATOR_SH="$top_builddir/tools/engy-validator"
[ -x "$MINER_SH" ] && [ -x "$VALIDATOR_SH" ] || fail "engy-miner / engy-validator were not built"
ROLES="miner validator gateway auditor serve"

# --- 1. the units ---------------------------------------------------------
mkdir -p "$T/units"
for r in $ROLES; do
	u="$top_builddir/etc/systemd/engy-$r.service"
	[ -f "$u" ] || fail "engy-$r.service was not built"
	for want in Type=notify Restart=on-failure User=engy Group=engy \
		"StateDirectory=engy/$r" NoNewPrivileges=yes ProtectSystem=strict \
		ProtectHome=read-only PrivateTmp=yes "ExecStartPre=.*/engyd -t -c .*/$r.conf" \
		"ExecStart=.*/engyd -c .*/$r.conf" "EnvironmentFile=-.*/$r.env"; do
		grep -q "^$want" "$u" || fail "engy-$r.service has no $want"
	done
	case $r in
	serve | auditor) grep -q '^MemoryDenyWriteExecute=no' "$u" || fail "$r: CUDA needs W+X" ;;
	*) grep -q '^MemoryDenyWriteExecute=yes' "$u" || fail "$r: MemoryDenyWriteExecute=yes missing" ;;
	esac
	# The same unit, naming this build's engyd (verify checks it exists).
	sed "s|^\(ExecStart[A-Za-z]*=\)[^ ]*/engyd |\1$top_builddir/engyd/engyd |" "$u" > "$T/units/engy-$r.service"
done
grep -q '^WatchdogSec=900' "$top_builddir/etc/systemd/engy-validator.service" || fail "the validator has no watchdog"
grep -q '^StateDirectory=engy/validator engy-sn53' "$top_builddir/etc/systemd/engy-validator.service" ||
	fail "the validator unit does not keep the public state paths writable"
ok "units for every role: notify, restart, user engy, state directory, hardening; the validator's watchdog"

if ! command -v systemd-analyze >/dev/null; then
	echo "# skip systemd-analyze verify: systemd-analyze is not installed (apt-get install systemd)"
else
	printf '[Service]\nExecStart=/bin/true\n' > "$T/probe.service"
	if ! probe=$(systemd-analyze verify "$T/probe.service" 2>&1); then
		echo "# skip systemd-analyze verify: it cannot run here: $probe"
	else
		for r in $ROLES; do
			out=$(systemd-analyze verify "$T/units/engy-$r.service" 2>&1) ||
				fail "systemd-analyze verify engy-$r.service: $out"
			[ -z "$out" ] || fail "systemd-analyze verify engy-$r.service warns: $out"
		done
		ok "systemd-analyze verify passes every unit without a warning"
	fi
fi

# make install puts the units, the sysusers entry and the wrappers in place.
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$top_builddir" DESTDIR="$T/root" \
	install-systemdsystemunitDATA install-dist_sysusersDATA install-binSCRIPTS > "$T/install.out" 2>&1 ||
	fail "make install of the operator files: $(cat "$T/install.out")"
for f in engy-miner.service engy-validator.service engy-gateway.service \
	engy-auditor.service engy-serve.service; do
	find "$T/root" -path "*/systemd/system/$f" | grep -q . || fail "make install put no $f"
done
find "$T/root" -path '*/sysusers.d/engy.conf' | grep -q . || fail "no sysusers.d/engy.conf installed"
for s in engy-miner engy-validator; do
	p=$(find "$T/root" -path "*/bin/$s")
	[ -x "$p" ] || fail "make install put no executable $s"
	grep -q '@bindir@\|@engyconfdir@' "$p" && fail "$s still has placeholders"
done
ok "make install: five units, sysusers.d/engy.conf, engy-miner and engy-validator"

# --- 2. the public miner's command line -----------------------------------
FAKE="$top_srcdir/tests/integration/fake_sglang.mjs"
serve() {  # name: sets <name>_URL
	node "$FAKE" serve "$T/$1.port" 8 "" 2> "$T/$1.err" &
	PIDS="$PIDS $!"
	i=0
	while [ ! -s "$T/$1.port" ]; do
		i=$((i + 1)); [ $i -le 200 ] || fail "fake serve $1 did not start: $(cat "$T/$1.err")"
		sleep 0.05
	done
	eval "$1_URL=http://127.0.0.1:$(cat "$T/$1.port")"
}
serve s1
serve s2

mkdir -p "$T/gw"
cat > "$T/gw.conf" <<C
role = "gateway"
state_dir = "$T/gw"
log_file = "$T/gw.log"
log_level = "debug"
plugin "transport-http" { listen = { "127.0.0.1:0" } }
plugin "transport-ws" { listen = "127.0.0.1:0" }
plugin "store-sqlite" { path = "$T/gw/engy.db" }
C
ENGY_KEY_PEPPER=operators-test-pepper-0123456789 "$ENGYD" -c "$T/gw.conf" 2> "$T/gw.stderr" &
PIDS="$PIDS $!"
wait_for "$T/gw.log" "event=ready" 60 || fail "gateway did not start: $(cat "$T/gw.log" "$T/gw.stderr")"
WSPORT=$(sed -n 's/.*event=ws_listen addr=127.0.0.1:\([0-9]*\).*/\1/p' "$T/gw.log" | tail -1)
GWURL="ws://127.0.0.1:$WSPORT/gw"

# The checkpoint: a byte-level tokenizer, a config and two shards.
mkdir -p "$T/model"
awk 'BEGIN {
	printf "{\"version\":\"1.0\",\"added_tokens\":[{\"id\":256,\"content\":\"<|eos|>\",";
	printf "\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":true}],";
	printf "\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,";
	printf "\"use_regex\":false},\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\",\"vocab\":{";
	n = 0;
	for (b = 0; b < 256; b++) {
		if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) c = b;
		else c = 256 + n++;
		printf "%s\"\\u%04x\":%d", (b ? "," : ""), c, b;
	}
	printf "},\"merges\":[]}}\n";
}' > "$T/model/tokenizer.json"
printf '{"model_type": "test-lm"}\n' > "$T/model/config.json"
printf 'aaaa' > "$T/model/model-00001-of-00002.safetensors"
printf 'bbbbbbb' > "$T/model/model-00002-of-00002.safetensors"
ROOT=$( { cat "$T/model/config.json"; printf 'model-00001-of-00002.safetensors4model-00002-of-00002.safetensors7'; } |
	sha256sum | cut -d' ' -f1)

# The shipped miner config, with the state directory and log moved here.
sed -e "s|^state_dir = .*|state_dir = \"$T/miner\"\\nlog_file = \"$T/miner.log\"|" \
	"$top_srcdir/etc/miner.conf" > "$T/miner.conf"
grep -q "^log_file = \"$T/miner.log\"" "$T/miner.conf" || fail "could not move the miner's log"
KEY="mk-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
MODEL_ID=qwen3.6-35b-a3b

miner_run() {  # log-name extra-env... -- wrapper args...
	name=$1; shift
	envs=""
	while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
	shift
	: > "$T/miner.log"
	# shellcheck disable=SC2086
	env GW="$GWURL" MINER_KEY="$KEY" MODEL="$MODEL_ID" MAX_INFLIGHT=8 \
		ENGYD="$ENGYD" ENGY_MINER_CONF="$T/miner.conf" $envs \
		"$MINER_SH" "$@" > "$T/$name.out" 2>&1 &
	MPID=$!
	PIDS="$PIDS $MPID"
	wait_for "$T/miner.log" "event=leg_open" 60 ||
		fail "$name: the miner never opened a leg: $(cat "$T/miner.log" "$T/$name.out")"
}
miner_stop() {
	kill -TERM "$MPID"
	wait "$MPID" || fail "the miner did not exit 0 on SIGTERM: $(tail -5 "$T/miner.log")"
}

# The runbook's invocation, word for word but the program's name.
miner_run public -- --checkpoint "$T/model" --serve-url "$s1_URL,$s2_URL"
INS="ins-$(printf '%s|%s|%s' "$(uname -n)" "$MODEL_ID" "$s1_URL,$s2_URL" | sha256sum | cut -c1-12)"
line=$(grep 'event=miner_prepared' "$T/miner.log")
case "$line" in *"model=$MODEL_ID model_root=$ROOT "*) ;; *) fail "--checkpoint was not the checkpoint: $line";; esac
case "$line" in *"worker_name=$INS instance_id=$INS "*) ;; *) fail "--serve-url was not the serve list: $line (want $INS)";; esac
# Our gateway denies the unregistered key: the hello reached GW.
wait_for "$T/gw.log" "event=worker_denied" 60 || fail "the miner did not say hello to GW: $(cat "$T/gw.log")"
grep -q "$KEY" "$T/miner.log" "$T/gw.log" && fail "the miner key reached a log"
miner_stop
ok "engy-miner --checkpoint DIR --serve-url URL,URL: model_root of DIR, instance id of both serves, a hello at GW"

# The environment twins alone (the public miner reads them too).
miner_run twins SERVE_URL="$s2_URL" CHECKPOINT="$T/model" ENGY_INSTANCE_ID=box-7 --
line=$(grep 'event=miner_prepared' "$T/miner.log")
case "$line" in *"model_root=$ROOT "*"worker_name=box-7 instance_id=box-7 "*) ;;
	*) fail "SERVE_URL, CHECKPOINT, ENGY_INSTANCE_ID: $line";; esac
miner_stop
ok "SERVE_URL, CHECKPOINT and ENGY_INSTANCE_ID in the environment (the worker name follows the instance id)"

miner_run flags ENGY_INSTANCE_ID=box-7 -- --checkpoint="$T/model" --serve-url="$s1_URL" --worker-name rack-2
line=$(grep 'event=miner_prepared' "$T/miner.log")
case "$line" in *"worker_name=rack-2 instance_id=box-7 "*) ;; *) fail "--worker-name: $line";; esac
miner_stop
ok "--opt=value forms and --worker-name over ENGY_INSTANCE_ID"

expect_fail "engy-miner refuses an unknown argument" "unknown argument '--bogus'" "$MINER_SH" --bogus
expect_fail "engy-miner: --checkpoint needs a value" "--checkpoint needs a value" "$MINER_SH" --checkpoint
expect_ok "engy-miner -t says what it would connect to" "serve: $s1_URL (\$SERVE_URL)" \
	env GW="$GWURL" MINER_KEY="$KEY" ENGYD="$ENGYD" ENGY_MINER_CONF="$T/miner.conf" \
	"$MINER_SH" --checkpoint "$T/model" --serve-url "$s1_URL" -t

# --- 3. the public validator's environment file ---------------------------
ENVF="$top_srcdir/tests/data/operators/env.validator"
mkdir -p "$T/home/.bittensor/wallets/default/hotkeys"
"$ENGYCTL" keys new --out "$T/home/.bittensor/wallets/default/hotkeys/default" > /dev/null
sed -e "s|^state_dir = .*|state_dir = \"$T/val\"\\nlog_file = \"$T/val.log\"|" \
	"$top_srcdir/etc/validator.conf" > "$T/validator.conf"
VENV="HOME=$T/home ENGYD=$ENGYD ENGY_VALIDATOR_CONF=$T/validator.conf"
# shellcheck disable=SC2086
out=$(env $VENV "$VALIDATOR_SH" --env-file "$ENVF" -t 2>&1) || fail "engy-validator -t with .env.validator: $out"
for want in "provider API: https://provider.engy.ai (\$ENGY_SN53_API)" \
	"chain: wss://entrypoint-finney.opentensor.ai:443 (\$ENGY_SN53_NETWORK=finney)" \
	"wallet: $T/home/.bittensor/wallets/default/hotkeys/default (\$ENGY_SN53_WALLET)" \
	"ok (role validator, 1 plugin instance)"; do
	case "$out" in *"$want"*) ;; *) fail "engy-validator -t: no '$want' in: $out";; esac
done
ok "engy-validator --env-file .env.validator (unchanged): the provider, finney's endpoint, the wallet; the empty master hotkey is the built-in one"

# A start under a service manager: the notify socket as systemd binds it.
python3 - "$T/notify.sock" "$T/notify.log" > "$T/notify.out" 2>&1 <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as f:
    print("listening", file=f)
    while True:
        f.write(s.recv(4096).decode() + "\n")
PY
PIDS="$PIDS $!"
wait_for "$T/notify.log" "^listening" 60 || fail "notify socket: $(cat "$T/notify.out")"
# The file unchanged; the environment, which wins over it, keeps this run
# off the network and out of /var/lib: the provider and the chain are a
# closed local port, the state files live here.
# shellcheck disable=SC2086
env $VENV NOTIFY_SOCKET="$T/notify.sock" WATCHDOG_USEC=900000000 \
	ENGY_SN53_API=http://127.0.0.1:9 \
	ENGY_SN53_MASTER_HOTKEY=5DXSBCCKH5ENuyHFNaAvtaMfbhEEWpjSJB4rzc4mJfsc1uvJ \
	ENGY_SN53_CHAIN_ENDPOINT=http://127.0.0.1:9 \
	ENGY_SN53_STATE_FILE="$T/val/state.json" ENGY_SN53_HEARTBEAT_FILE="$T/val/heartbeat.json" \
	"$VALIDATOR_SH" --env-file "$ENVF" > "$T/val.out" 2>&1 &
VPID=$!
PIDS="$PIDS $VPID"
wait_for "$T/notify.log" "^WATCHDOG=1" 60 || fail "no WATCHDOG=1 after a tick: $(cat "$T/notify.log" "$T/val.log" "$T/val.out")"
grep -q 'event=wallet wallet=default hotkey=default' "$T/val.log" || fail "the wallet names: $(cat "$T/val.log")"
grep -q 'event=validator_start netuid=53 .*poll_s=300 ' "$T/val.log" || fail "netuid, poll_s: $(grep validator_start "$T/val.log")"
grep -q "event=tick n=1 outcome=skipped reason=\"fetch failed" "$T/val.log" || fail "the tick: $(grep event=tick "$T/val.log")"
[ -s "$T/val/heartbeat.json" ] || fail "no heartbeat at ENGY_SN53_HEARTBEAT_FILE"
states=$(grep -v '^listening' "$T/notify.log" | tr '\n' ' ')
case "$states" in "WATCHDOG_USEC=900000000 READY=1 WATCHDOG=1 "*) ;;
	*) fail "notify order: $states";; esac
kill -TERM "$VPID"
wait "$VPID" || fail "the validator did not exit 0: $(tail -5 "$T/val.log")"
grep -q '^STOPPING=1' "$T/notify.log" || fail "no STOPPING=1: $(cat "$T/notify.log")"
ok "the validator started from .env.validator: WATCHDOG_USEC (its stall limit), READY=1, WATCHDOG=1 after its tick, STOPPING=1"

expect_fail "engy-validator: a file that is not KEY=value" "bad.env:2: 'NOT A' is not a variable name" \
	sh -c "printf 'A=1\nNOT A=2\n' > '$T/bad.env'; '$VALIDATOR_SH' --env-file '$T/bad.env' -t"
printf 'export ENGY_SN53_WALLET="quoted w"  \nENGY_SN53_WALLET_HOTKEY=h\r\nENGY_SN53_NETWORK=test # inline\n' > "$T/q.env"
# shellcheck disable=SC2086
out=$(env $VENV "$VALIDATOR_SH" --env-file "$T/q.env" -t 2>&1) || true
case "$out" in *"chain: wss://test.finney.opentensor.ai:443"*) ;; *) fail "inline comment: $out";; esac
case "$out" in *"wallets/quoted w/hotkeys/h:"*) ;; *) fail "export, quotes, CRLF: $out";; esac
# shellcheck disable=SC2086
out=$(env $VENV ENGY_SN53_NETWORK=local "$VALIDATOR_SH" --env-file "$ENVF" -t 2>&1) || true
case "$out" in *"chain: ws://127.0.0.1:9944 (\$ENGY_SN53_NETWORK=local)"*) ;; *) fail "the environment should win over the file: $out";; esac
ok "engy-validator: export, quotes and comments; a variable already set wins over the file"
echo "1..$N_OK"
