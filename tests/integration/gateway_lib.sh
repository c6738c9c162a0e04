# Shared helpers of the gateway tests (sourced after lib.sh's variables):
# a store made with engyctl admin, engyd -c as a gateway on 127.0.0.1
# port 0, engy miners on backend-ref with a tiny generated checkpoint,
# scripted miner peers (bad_miner.mjs), and the money checks.
. "$top_srcdir/tests/integration/lib.sh"

PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
if [ ! -d "$PEERS" ]; then
	skip_or_fail "no peer modules at $PEERS (run npm ci --prefix tests/peers)"
fi
for m in ws openai @anthropic-ai/sdk; do
	[ -d "$PEERS/$m" ] || fail "no $m module in $PEERS (run npm ci --prefix tests/peers)"
done
command -v node >/dev/null || fail "node is required for the gateway tests"
command -v curl >/dev/null || fail "curl is required"
PEER="$top_srcdir/tests/integration/bad_miner.mjs"
unset GW MINER_KEY MODEL MAX_INFLIGHT MAX_INPUT_TOKENS MAX_OUTPUT_TOKENS \
	MAX_REQUEST_S MAX_TOKENS STREAM_FLUSH_S ENGY_WORKER_NAME ENGY_GW_WORKERS \
	ENGY_HEARTBEAT_S ENGY_CHECKPOINT ENGY_GW_ONBOARDING

make_plugin_dir "$T/plug"
# ENGY_TEST_STORE=store-postgres: the same tests on a throwaway server.
STORE=${ENGY_TEST_STORE:-store-sqlite}
STORE_CONF=""
if [ "$STORE" = store-postgres ]; then
	[ -f "$T/plug/$STORE.so" ] || skip_or_fail "store-postgres is not built"
	. "$top_srcdir/tests/integration/pg_lib.sh"
	pg_start
	STORE_CONF="conninfo = \"$ENGY_TEST_PG\""
fi
for p in transport-http transport-ws "$STORE"; do
	[ -f "$T/plug/$p.so" ] || fail "$p.so not built"
done
export ENGY_PLUGIN_DIR="$T/plug" ENGY_STATE_DIR="$T/gw"
export ENGY_KEY_PEPPER="gateway-test-pepper-0123456789"
mkdir -p "$T/gw"
A() {
	if [ "$STORE" = store-postgres ]; then
		"$ENGYCTL" admin --store "$STORE" -o conninfo="$ENGY_TEST_PG" "$@"
	else
		"$ENGYCTL" admin "$@"
	fi
}

# gw_conf [gateway-section-lines]: $T/gw.conf (GW_HTTP_OPTS: more
# transport-http options).
gw_conf() {
	cat > "$T/gw.conf" <<C
role = "gateway"
state_dir = "$T/gw"
log_file = "$T/gw.log"
log_level = "info"
shutdown_timeout = 10
gateway {
$1
}
plugin "transport-http" { listen = { "127.0.0.1:0" } timeout_s = 10 ${GW_HTTP_OPTS:-} }
plugin "transport-ws" { listen = "127.0.0.1:0" }
plugin "$STORE" { $STORE_CONF }
C
}

# gw_start: engyd in the background; sets GWPID, HPORT (buyers), WSPORT.
gw_start() {
	: > "$T/gw.log"
	"$ENGYD" --no-dlclose -c "$T/gw.conf" 2> "$T/gw.stderr" &
	GWPID=$!
	PIDS="$PIDS $GWPID"
	wait_for "$T/gw.log" "event=ready" 20 || fail "gateway: no ready line: $(cat "$T/gw.log" "$T/gw.stderr")"
	HPORT=$(sed -n 's/.*inst=transport-http event=listen addr=127.0.0.1 port=\([0-9]*\).*/\1/p' "$T/gw.log" | tail -1)
	WSPORT=$(sed -n 's/.*event=ws_listen addr=127.0.0.1:\([0-9]*\).*/\1/p' "$T/gw.log" | tail -1)
	[ -n "$HPORT" ] && [ -n "$WSPORT" ] || fail "gateway ports: $(cat "$T/gw.log")"
	BASE="http://127.0.0.1:$HPORT"
	GWURL="ws://127.0.0.1:$WSPORT/gw"
}

# gw_stop: SIGTERM; the gateway must drain and exit 0.  gw_wait: the
# same after a SIGTERM the test sent itself.
gw_stop() {
	kill -TERM "$GWPID"
	gw_wait
}
gw_wait() {
	i=0
	while kill -0 "$GWPID" 2>/dev/null; do
		i=$((i + 1)); [ $i -le 400 ] || fail "gateway still running after SIGTERM"
		sleep 0.05
	done
	wait "$GWPID" && rc=0 || rc=$?
	[ "$rc" = 0 ] || fail "gateway exit $rc: $(tail -5 "$T/gw.log") $(cat "$T/gw.stderr")"
	# Sanitizer reports land here.
	[ ! -s "$T/gw.stderr" ] || fail "gateway stderr: $(head -20 "$T/gw.stderr")"
}

# tiny_model: a generated Qwen3 checkpoint at $T/model.
tiny_model() {
	[ -f "$T/plug/backend-ref.so" ] && [ -f "$T/plug/verifier-toploc.so" ] ||
		fail "backend-ref.so and verifier-toploc.so are needed"
	[ -d "$T/model" ] || "$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 3 \
		--out "$T/model" --quiet || fail "mkmodel"
}

# register HOTKEY: a miner's key on stdout.
register() {
	A miners register "$1" 2>/dev/null || fail "miners register $1"
}

# miner NAME KEY WORKER_NAME MAX_INFLIGHT: an engy miner on backend-ref;
# waits for its admission.
miner() {
	cat > "$T/$1.conf" <<C
role = "miner"
state_dir = "$T/state-$1"
log_file = "$T/$1.log"
shutdown_timeout = 5
miner { model = "tiny" gpu_probe = false max_tokens = 16 }
plugin "transport-ws" { reconnect_min_ms = 100 reconnect_max_ms = 500 }
plugin "backend-ref" { checkpoint = "$T/model" threads = 1 max_batch = 4 }
plugin "verifier-toploc" { topk = 128 decode_batching_size = 32 }
C
	GW="$GWURL" MINER_KEY="$2" ENGY_WORKER_NAME="$3" MAX_INFLIGHT="$4" \
		"$ENGYD" --no-dlclose -c "$T/$1.conf" 2> "$T/$1.stderr" &
	PIDS="$PIDS $!"
	eval "PID_$1=$!"
	wait_for "$T/$1.log" "event=admit" 30 || fail "miner $1 not admitted: $(tail -5 "$T/$1.log") $(grep -e denied -e leg_ "$T/gw.log" | tail -3)"
}

# peer NAME MODE [VAR=VALUE ...]: a scripted miner peer; waits for its
# first line after the handshake (admit or deny).  Sets PEERPID.
peer() {
	pn=$1; pm=$2; shift 2
	env "$@" node "$PEER" "$PEERS" "$GWURL" "$pm" > "$T/peer-$pn.out" 2>&1 &
	PEERPID=$!
	PIDS="$PIDS $PEERPID"
	eval "PID_$pn=$PEERPID"
	wait_for "$T/peer-$pn.out" 'admit\|deny' 10 || fail "peer $pn: $(cat "$T/peer-$pn.out")"
}

# peer_wait NAME NEEDLE: the peer printed NEEDLE within 10 s.
peer_wait() {
	wait_for "$T/peer-$1.out" "$2" 10 || fail "peer $1: no '$2' in: $(cat "$T/peer-$1.out")"
}

# micro DOLLARS: "-0.000150" -> -150.
micro() {
	echo "$1" | awk -F. '{ s = 1; w = $1; if (substr(w, 1, 1) == "-") { s = -1; w = substr(w, 2) }
		printf "%d\n", s * (w * 1000000 + $2) }'
}

# money ACCOUNT: the account's books balance: nothing reserved, balance =
# credited - spent >= 0, and the request log's costs add up to spent.
# Sets SPENT and BALANCE (micro-USD).
money() {
	line=$(A accounts show "$1" | head -1)
	bal=$(micro "$(echo "$line" | sed -n 's/.* balance=\([0-9.-]*\).*/\1/p')")
	res=$(micro "$(echo "$line" | sed -n 's/.* reserved=\([0-9.-]*\).*/\1/p')")
	cre=$(micro "$(echo "$line" | sed -n 's/.* credited=\([0-9.-]*\).*/\1/p')")
	spe=$(micro "$(echo "$line" | sed -n 's/.* spent=\([0-9.-]*\).*/\1/p')")
	logged=$(A log tail -n 100000 --account "$1" | sed -n 's/.* cost=\([0-9.]*\).*/\1/p' |
		awk -F. '{ s += $1 * 1000000 + $2 } END { printf "%d\n", s }')
	[ "$res" = 0 ] || fail "$1: reserved $res left: $line"
	[ "$bal" -ge 0 ] || fail "$1: negative balance: $line"
	[ "$((cre - spe))" = "$bal" ] || fail "$1: balance $bal != credited $cre - spent $spe"
	[ "$logged" = "$spe" ] || fail "$1: log costs $logged != spent $spe"
	SPENT=$spe
	BALANCE=$bal
}

# wait_settled: every request the gateway took is settled (inflight 0).
wait_settled() {
	i=0
	while :; do
		d=$(grep -c "event=request_done" "$T/gw.log" || true)
		s=$(grep -c "event=request_settled" "$T/gw.log" || true)
		[ "$d" = "$s" ] && break
		i=$((i + 1)); [ $i -le 1200 ] || fail "requests not settled: done=$d settled=$s"
		sleep 0.05
	done
}
