# SPDX-License-Identifier: MIT
# Shared by gateway_onboard.sh, gateway_breaker.sh and gateway_tee.sh
# (sourced after lib.sh): a store made with engyctl admin, an engyd
# gateway on ephemeral ports, scripted miners (probe_miner.mjs on npm
# `ws`), buyer requests with curl, the internal API, JSON read with node.

# ENGY_TEST_KEEP=DIR keeps a copy of the run's files (logs, outputs).
if [ -n "${ENGY_TEST_KEEP:-}" ]; then
	trap 'rm -rf "$ENGY_TEST_KEEP"; cp -r "$T" "$ENGY_TEST_KEEP"; cleanup' EXIT
fi
PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
if [ ! -d "$PEERS/ws" ]; then
	skip_or_fail "no ws peer module at $PEERS (run npm ci --prefix tests/peers)"
fi
command -v node >/dev/null || fail "node is required for the miner peers"
command -v curl >/dev/null || fail "curl is required"
PM="$top_srcdir/tests/integration/probe_miner.mjs"
make_plugin_dir "$T/plug"
for p in transport-http transport-ws store-sqlite; do
	[ -f "$T/plug/$p.so" ] || fail "$p.so not built"
done
TOKEN="tee-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
export ENGY_KEY_PEPPER="gw-mod-pepper-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
export ENGY_TEE_TOKEN="$TOKEN"
# Dev accounts' SS58 addresses: the miners' hotkeys.
HK_A=5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY
HK_B=5FHneW46xGXgs5mUiveU4sbTyGBzmstUspZC92UhjJM694ty
HK_C=5FLSigC9HGRKVhB9FiEo4Y3koPsNmBmLJbpXg2mp1hXcS59Y
HK_D=5DAAnrj7VHTznn2AWBemMuyBwZWs6FNFjdyVXUeYum3PTXFy
HK_E=5HGjWAeFDfFCWPsjFQdVV2Msvz2XtMktvgocEZcCj68kUMaw

# A: engyctl admin on the gateway's store ($T/state/engy.db).
A() {
	ENGY_PLUGIN_DIR="$T/plug" ENGY_STATE_DIR="$T/state" "$ENGYCTL" admin "$@"
}

# store_init [models put options...]: an account with credit, a buyer key
# ($BKEY), the model test-model.
store_init() {
	mkdir -p "$T/state"
	A accounts create buyer > /dev/null || fail "accounts create"
	A topup buyer 100 > /dev/null || fail "topup"
	BKEY=$(A keys create buyer 2> /dev/null) || fail "keys create"
	A models put test-model --max-input-tokens 4096 --max-output-tokens 512 \
		--max-request-s 60 --price-input 1 --price-output 2 "$@" > /dev/null ||
		fail "models put"
}

# miner_key HOTKEY [admin miners register options]: prints the MINER_KEY.
miner_key() {
	A miners register "$@" 2> /dev/null || fail "miners register $1"
}

# gw_conf NAME GATEWAY_OPTIONS [MORE_SECTIONS]
gw_conf() {
	cat > "$T/$1.conf" <<C
role = "gateway"
plugin_dir = "$T/plug"
state_dir = "$T/state"
log_file = "$T/$1.log"
metrics_listen = "127.0.0.1:0"
shutdown_timeout = 5
gateway {
  first_token_timeout_s = 20
  $2
}
plugin "transport-http" { listen = { "127.0.0.1:0" } }
plugin "transport-ws" { listen = "127.0.0.1:0" }
plugin "store-sqlite" { synchronous = "normal" }
${3:-}
C
}

# gw_start NAME: engyd in the background; sets GPID, HPORT (buyers and
# /internal), WPORT (miners), MPORT (metrics), GW (the miners' URL).
gw_start() {
	"$ENGYD" --no-dlclose -c "$T/$1.conf" 2> "$T/$1.stderr" &
	GPID=$!
	PIDS="$PIDS $GPID"
	wait_for "$T/$1.log" "event=ready" 20 ||
		fail "$1: no ready line: $(cat "$T/$1.log" "$T/$1.stderr")"
	HPORT=$(sed -n 's/.*inst=transport-http event=listen .*port=\([0-9]*\).*/\1/p' "$T/$1.log" | head -1)
	WPORT=$(sed -n 's/.*event=ws_listen addr=[0-9.]*:\([0-9]*\).*/\1/p' "$T/$1.log" | head -1)
	MPORT=$(sed -n 's/.*event=metrics_listen .*port=\([0-9]*\).*/\1/p' "$T/$1.log" | head -1)
	[ -n "$HPORT" ] && [ -n "$WPORT" ] && [ -n "$MPORT" ] ||
		fail "$1: ports: http=$HPORT ws=$WPORT metrics=$MPORT"
	GW="ws://127.0.0.1:$WPORT/gw"
}

# gw_stop NAME: SIGTERM, exit 0 within 15 s.
gw_stop() {
	kill -TERM "$GPID"
	i=0
	while kill -0 "$GPID" 2> /dev/null; do
		i=$((i + 1)); [ $i -le 300 ] || fail "$1: still running after SIGTERM"
		sleep 0.05
	done
	wait "$GPID" && rc=0 || rc=$?
	stopped_clean "$1" "$rc" "$T/$1.log" "$T/$1.stderr"
}

# pm NAME KEY [VAR=VALUE...]: a scripted miner; sets PMPID.  Its events
# go to $T/pm-NAME.out, its mode file is $T/pm-NAME.mode.
pm() {
	n=$1 k=$2
	shift 2
	: > "$T/pm-$n.out"
	env PM_KEY="$k" PM_NAME="$n" PM_MODE_FILE="$T/pm-$n.mode" "$@" \
		node "$PM" "$PEERS" "$GW" "$T/pm-$n.out" 2> "$T/pm-$n.err" &
	PMPID=$!
	PIDS="$PIDS $PMPID"
	wait_for "$T/pm-$n.out" "admitted" 10 ||
		fail "miner $n not admitted: $(cat "$T/pm-$n.out" "$T/pm-$n.err" 2> /dev/null)"
}

# chat [TEXT]: one buyer request; prints the HTTP status, the body in $T/chat.out
chat() {
	curl -s -o "$T/chat.out" -w '%{http_code}' \
		-H "Authorization: Bearer $BKEY" -H 'Content-Type: application/json' \
		--data "{\"model\":\"test-model\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"BUYER-${1:-hello}\"}]}" \
		"http://127.0.0.1:$HPORT/v1/chat/completions"
}

# internal PATH [curl options]: GET (or what the options say) on the
# internal API with the token; the body in $T/int.out, prints the status.
internal() {
	p=$1
	shift
	curl -s -o "$T/int.out" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
		"$@" "http://127.0.0.1:$HPORT$p"
}

# js FILE EXPR: EXPR over the JSON in FILE (bound to `j`), printed.
js() {
	node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
		const v = ('"$2"'); console.log(typeof v === "object" ? JSON.stringify(v) : v);' "$1"
}

# state NAME: the state of worker NAME per /internal/v1/workers.
state() {
	internal /internal/v1/workers > /dev/null
	js "$T/int.out" "(j.workers.find((w) => w.name === '$1') || {}).state"
}

# wait_state NAME STATE SECONDS
wait_state() {
	i=0
	while [ "$(state "$1")" != "$2" ]; do
		i=$((i + 1))
		[ $i -le $(($3 * 10)) ] || return 1
		sleep 0.1
	done
}

# metric NAME{labels}: a value from engyd's /metrics.
metric() {
	curl -s "http://127.0.0.1:$MPORT/metrics" | awk -v m="$1" 'index($0, m " ") == 1 { print $NF }'
}

# no_sanitizer_reports: every engyd run left a clean stderr (ASan, UBSan).
# (LeakSanitizer's own fatal error, judged by sanitizer_tool_failed when
# the process exited, is not a report: its lines, SAN_TOOL_LINES, are
# left out.)
no_sanitizer_reports() {
	if cat "$T"/*.stderr 2> /dev/null | grep -v "$SAN_TOOL_LINES" |
		grep -q 'Sanitizer\|runtime error'; then
		fail "a sanitizer report: $(grep -h -A8 'Sanitizer\|runtime error' "$T"/*.stderr | head -20)"
	fi
}
