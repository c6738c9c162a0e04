#!/bin/sh
# SPDX-License-Identifier: MIT
# The miner role end to end on 127.0.0.1, against a gateway written
# independently on the npm `ws` package (tests/integration/fake_gateway.mjs,
# which checks every frame against specs/protocol.md): engyd -c with
# transport-ws, the scripted backend test-lm and verifier-toploc.  The leg
# plan from /meta (two workers, a failing /meta, ENGY_GW_WORKERS with a
# total below it), hello and heartbeat, streaming and not, cancel before
# the work starts and mid-stream (the backend sees it), ping, reconnect,
# deny, a gateway restart, bad frames, backend failures, capacity, the
# lock file, metrics, MINER_KEY never in a log, a draining SIGTERM; and
# the proofs of served requests pass `engyctl toploc verify` on rows
# recomputed independently: through engy's serve role for test-lm, and
# with `engyctl ref` on a generated Qwen3 checkpoint for backend-ref.
# Oracle: independent: fake_gateway.mjs, written from specs/protocol.md on
# the npm ws package, checks every frame and predicts test-lm's output.
. "$top_srcdir/tests/integration/lib.sh"

PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
if [ ! -d "$PEERS/ws" ]; then
	skip_or_fail "no ws peer module at $PEERS (run npm ci --prefix tests/peers)"
fi
command -v node >/dev/null || fail "node is required for the gateway peer"
command -v curl >/dev/null || fail "curl is required"
GWJS="$top_srcdir/tests/integration/fake_gateway.mjs"
# The runbook's variables must come from this script only.
unset GW MINER_KEY MODEL MAX_INFLIGHT MAX_INPUT_TOKENS MAX_OUTPUT_TOKENS \
	MAX_REQUEST_S MAX_TOKENS STREAM_FLUSH_S ENGY_WORKER_NAME ENGY_GW_WORKERS \
	ENGY_HEARTBEAT_S ENGY_CHECKPOINT TOPLOC_TOPK TOPLOC_DBS

make_plugin_dir "$T/plug"
for p in transport-ws verifier-toploc test-lm transport-http; do
	[ -f "$T/plug/$p.so" ] || fail "$p.so not built"
done

# A byte-level tokenizer.json (id = byte), <|eos|> = 256, and two added
# tokens that script test-lm through a system message: prompt id 3 makes
# generate() fail, id 2 then N makes the request fail after N tokens.
# tokenizer DIR N: plus added tokens <t257> .. <tN> (fake_sglang's ids).
tokenizer() {
	mkdir -p "$1"
	awk -v top="$2" 'BEGIN {
	printf "{\"version\":\"1.0\",\"added_tokens\":[";
	printf "{\"id\":256,\"content\":\"<|eos|>\",\"single_word\":false,\"lstrip\":false,";
	printf "\"rstrip\":false,\"normalized\":false,\"special\":true},";
	printf "{\"id\":3,\"content\":\"<|im_start|>system\\nFAIL\",\"single_word\":false,";
	printf "\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":false},";
	printf "{\"id\":2,\"content\":\"<|im_start|>system\\nMID\",\"single_word\":false,";
	printf "\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":false}";
	for (i = 257; i <= top; i++)
		printf ",{\"id\":%d,\"content\":\"<t%d>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":false}", i, i;
	printf "],\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"ByteLevel\",";
	printf "\"add_prefix_space\":false,\"use_regex\":false},\"decoder\":{\"type\":\"ByteLevel\"},";
	printf "\"model\":{\"type\":\"BPE\",\"vocab\":{";
	n = 0; first = 1;
	for (b = 0; b < 256; b++) {
		if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) c = b;
		else c = 256 + n++;
		if (b == 2 || b == 3) continue;
		printf "%s\"\\u%04x\":%d", (first ? "" : ","), c, b; first = 0;
	}
	printf "},\"merges\":[]}}\n";
	}' > "$1/tokenizer.json"
	printf '{"model_type": "test-lm"}\n' > "$1/config.json"
}
tokenizer "$T/model" 256
printf 'bbbbbbbbbb' > "$T/model/model-00002-of-00002.safetensors"
printf 'aaa' > "$T/model/model-00001-of-00002.safetensors"

KEY="mk-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
LM='plugin "test-lm" { model_path = "'"$T/model"'" delay_ms = 10 hidden_size = 128 max_context = 4096 }'

conf() {  # name, backend section
	cat > "$T/$1.conf" <<C
role = "miner"
plugin_dir = "$T/plug"
state_dir = "$T/state-$1"
log_file = "$T/$1.log"
metrics_listen = "127.0.0.1:0"
shutdown_timeout = 10
miner { gpu_probe = false }
plugin "transport-ws" { }
$2
plugin "verifier-toploc" { topk = 128 decode_batching_size = 32 }
C
}

# gw SCENARIO: the gateway peer in the background; sets GWPID, GWPORT.
gw() {
	mkdir -p "$T/out-$1"
	node "$GWJS" "$PEERS" "$1" "$T/out-$1" > "$T/gw-$1.out" 2>&1 &
	GWPID=$!
	PIDS="$PIDS $GWPID"
	wait_for "$T/gw-$1.out" "listening port=" 60 || fail "gateway $1: $(cat "$T/gw-$1.out")"
	GWPORT=$(sed -n 's/^listening port=//p' "$T/gw-$1.out")
}

# miner NAME: engyd in the background with the environment set by the
# caller; sets MPID and MPORT (metrics).  Plugins stay mapped at exit:
# libraries backend-ref may link leave allocations a leak checker
# misreads once unloaded.
miner() {
	GW="ws://127.0.0.1:$GWPORT/gw" MINER_KEY="$KEY" ENGY_WS_RECONNECT_MIN_MS=100 \
		ENGY_WS_RECONNECT_MAX_MS=500 "$ENGYD" --no-dlclose -c "$T/$1.conf" 2> "$T/$1.stderr" &
	MPID=$!
	PIDS="$PIDS $MPID"
	wait_for "$T/$1.log" "event=ready" 60 || fail "$1: no ready line: $(cat "$T/$1.log" "$T/$1.stderr")"
	MPORT=$(sed -n 's/.*event=metrics_listen .*port=\([0-9]*\).*/\1/p' "$T/$1.log" | head -1)
}

# gw_wait SCENARIO SECONDS: the gateway's verdict (SECONDS only bounds a hang:
# the verdict comes as soon as the gateway exits).
gw_wait() {
	i=0
	while kill -0 "$GWPID" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le $(($2 * 10)) ] || fail "gateway $1 still running: $(tail -5 "$T/gw-$1.out")"
		sleep 0.1
	done
	wait "$GWPID" && rc=0 || rc=$?
	sed -n 's/^ok - /  gateway: /p' "$T/gw-$1.out"
	[ "$rc" = 0 ] || fail "gateway $1 (exit $rc): $(grep -v '^ok' "$T/gw-$1.out" | tail -5)"
}

stop_miner() {  # name
	kill -TERM "$MPID"
	i=0
	while kill -0 "$MPID" 2>/dev/null; do
		i=$((i + 1)); [ $i -le 200 ] || fail "$1: still running after SIGTERM"
		sleep 0.05
	done
	wait "$MPID" && rc=0 || rc=$?
	stopped_clean "$1" "$rc" "$T/$1.log" "$T/$1.stderr"
}

metric() {  # name{labels}
	curl -s "http://127.0.0.1:$MPORT/metrics" | awk -v m="$1" 'index($0, m " ") == 1 { print $NF }'
}

export EXP_KEY="$KEY" EXP_MODEL=test-model EXP_CKPT="$T/model" EXP_TESTLM=1

# --- configuration errors ---
conf main "$LM"
"$ENGYD" -t -c "$T/main.conf" > /dev/null 2>&1 && fail "engyd -t without GW passed"
GW=ws://127.0.0.1:9/gw "$ENGYD" -t -c "$T/main.conf" > /dev/null 2>&1 || fail "engyd -t refuses the miner config"
ok "engyd -t: gw is required (GW), the config is accepted with it"
GW=ws://127.0.0.1:9/gw "$ENGYD" -c "$T/main.conf" > /dev/null 2>&1 && fail "started without MINER_KEY"
grep -q 'event=config_invalid option=miner_key' "$T/main.log" || fail "no miner_key error: $(cat "$T/main.log")"
GW=http://127.0.0.1:9/gw MINER_KEY=x "$ENGYD" -c "$T/main.conf" > /dev/null 2>&1 && fail "started with an http GW"
grep -q 'event=config_invalid option=gw reason="not a ws:// or wss:// URL"' "$T/main.log" ||
	fail "no gw error: $(cat "$T/main.log")"
rm -f "$T/main.log"
ok "a missing MINER_KEY or a GW that is not ws(s):// stops engyd with the reason"

# --- main: two gateway workers, the whole protocol ---
# MAX_OUTPUT_TOKENS 200: the requests the gateway cancels (at capacity,
# mid-stream, at a SIGTERM) last 2 s at test-lm's 10 ms a token, long
# past the frames that check them on a loaded machine.
export GW_META=2 EXP_TOTAL=8 EXP_LEGS=2 EXP_SHARE=4 EXP_MAX_INPUT=300 EXP_MAX_OUTPUT=200 EXP_MAX_TOKENS=12
gw main
MODEL=test-model MAX_INFLIGHT=8 MAX_INPUT_TOKENS=300 MAX_OUTPUT_TOKENS=200 MAX_TOKENS=12 \
	ENGY_HEARTBEAT_S=1 miner main
MAIN_PID=$MPID
# One miner per node: a second one on the same state_dir refuses to start.
GW="ws://127.0.0.1:$GWPORT/gw" MINER_KEY="$KEY" "$ENGYD" -c "$T/main.conf" \
	> /dev/null 2> "$T/second.stderr" && fail "a second miner started"
grep -q "event=lock_held path=$T/state-main/miner.lock holder_pid=$MAIN_PID" "$T/main.log" ||
	fail "no lock_held line: $(grep lock "$T/main.log")"
ok "one miner per node: a second one exits, naming the lock file and its holder"
gw_wait main 180
L="$T/main.log"
grep -q 'event=deny leg=1 worker=1 reason="key revoked (test)"' "$L" || fail "deny not logged: $(grep deny "$L")"
grep -q 'event=admit leg=0 worker=0' "$L" || fail "admit not logged"
grep -q 'event=reconnect leg=0 worker=0' "$L" || fail "reconnect not logged"
ok "admit, deny (with its reason) and reconnect are logged"
grep -q 'event=request_cancel corr_id=c-early rid=engy-[0-9a-f]* state=prep why=cancelled' "$L" ||
	fail "cancel before start: $(grep c-early "$L")"
# Which state a cancel meets depends on the machine's speed (under ASan
# some of the eight capacity requests may still be rendered on the pool):
# every cancel is logged with its state, and each one met in generation
# reaches test-lm under its rid (test-lm also sees the miner's own cancels
# at a stop string).
n=$(grep -c 'inst=test-lm event=cancel rid=engy-' "$L")
c=$(grep -c 'event=request_cancel .* why=cancelled' "$L")
[ "$c" -ge 10 ] || fail "$c cancels logged by the miner, want 10 (early, mid-stream, 8 at capacity)"
# Each of them freed its slot with one `cancelled` frame (the fake
# gateway checks one per corr_id, on its leg).
a=$(sed -n 's/^cancelled acks=\([0-9]*\)$/\1/p' "$T/gw-main.out")
[ -n "$a" ] && [ "$a" -ge 10 ] || fail "cancelled frames: '$a', want >= 10"
g=0
for rid in $(sed -n 's/.*event=request_cancel .* rid=\([^ ]*\) state=gen .*/\1/p' "$L"); do
	grep -q "inst=test-lm event=cancel rid=$rid " "$L" || fail "the cancel of $rid in generation did not reach test-lm"
	g=$((g + 1))
done
[ "$g" -ge 2 ] || fail "$g cancels in generation, want the mid-stream and the orphaned one"
for rid in $(sed -n 's/.*event=request_cancel .* rid=\([^ ]*\) state=prep .*/\1/p' "$L"); do
	! grep -q "inst=test-lm event=generate rid=$rid " "$L" || fail "$rid was cancelled in prep but generated"
done
grep -q 'event=request_cancel .* state=gen why=orphaned' "$L" || fail "no orphaned request"
# Every other cancel test-lm saw is the miner's own at a stop string: a
# request that still ends ok.
s=0
for rid in $(sed -n 's/.*inst=test-lm event=cancel rid=\([^ ]*\) .*/\1/p' "$L"); do
	grep -q "event=request_cancel .* rid=$rid " "$L" && continue
	grep -q "event=request_done corr_id=[^ ]* rid=$rid outcome=ok " "$L" ||
		fail "test-lm saw a cancel of $rid that the miner neither logged nor ended ok: $(grep "rid=$rid " "$L")"
	s=$((s + 1))
done
[ "$s" -ge 1 ] || fail "no cancel at a stop string reached test-lm"
[ "$n" = $((g + s)) ] || fail "$n cancels at test-lm, want $g in generation + $s at a stop string"
ok "cancels reach the backend ($g in generation + $s at a stop string = $n at test-lm); a cancel in prep never generates; orphans are dropped"
ok_n=$(metric 'engy_miner_requests_total{outcome="ok"}')
[ "${ok_n:-0}" -ge 9 ] || fail "ok requests: $ok_n"
for o in cancelled error refused orphaned; do
	v=$(metric "engy_miner_requests_total{outcome=\"$o\"}")
	[ "${v:-0}" -ge 1 ] || fail "no $o in metrics"
done
[ "$(metric engy_miner_inflight)" = 0 ] || fail "inflight gauge"
[ -n "$(metric engy_miner_legs_open)" ] || fail "legs gauge"
[ "$(metric engy_miner_ttft_seconds_count)" -ge 10 ] || fail "ttft histogram"
[ "$(metric engy_miner_completion_tokens_total)" -ge 100 ] || fail "token counter"
ok "metrics: requests by outcome, in flight, legs open, time to first token, tokens"
stop_miner main
grep -q 'event=drained' "$L" || fail "no drain on SIGTERM"
ok "SIGTERM drains and exits 0"

# --- /meta fails: one leg at GW with the whole capacity ---
export GW_META=404 EXP_TOTAL=8 EXP_LEGS=1 EXP_SHARE=8 EXP_MAX_OUTPUT=1000
conf single "$LM"
gw single
MODEL=test-model MAX_INFLIGHT=8 MAX_INPUT_TOKENS=300 MAX_OUTPUT_TOKENS=1000 miner single
wait_for "$T/gw-single.out" "term-now" 60 || fail "single: $(cat "$T/gw-single.out")"
kill -TERM "$MPID"
# The signal is taken by the event loop in its own time: a serve frame
# sent before engyd has begun its shutdown would rightly be served.  The
# gateway sends its "too late" request once the miner has logged that
# it stops (the log line and the role's stop are one callback on the
# loop that also reads the leg, so no frame is read between them).
wait_for "$T/single.log" "event=shutdown_begin" 60 || fail "single: no shutdown_begin after SIGTERM"
touch "$T/out-single/termed"
gw_wait single 180
wait "$MPID" || fail "single: exit $? after SIGTERM"
grep -q 'event=drained' "$T/single.log" || fail "single: no drain"

# --- ENGY_GW_WORKERS=4 with MAX_INFLIGHT=2: two random workers at 1 ---
export GW_META=2 EXP_TOTAL=2 EXP_LEGS=2 EXP_SHARE=1 EXP_MAX_OUTPUT=200 EXP_WORKER_NAME=box-7
conf subset "$LM"
gw subset
MODEL=test-model MAX_INFLIGHT=2 MAX_INPUT_TOKENS=300 MAX_OUTPUT_TOKENS=200 ENGY_GW_WORKERS=4 \
	ENGY_WORKER_NAME=box-7 miner subset
gw_wait subset 180
grep -q 'event=config_warning option=max_inflight value=2' "$T/subset.log" || fail "no warning for a total under 8"
stop_miner subset
unset EXP_WORKER_NAME
ok "ENGY_WORKER_NAME names the worker; a total under 8 is warned about"

# --- the proofs verify on rows recomputed by engy's serve role ---
cat > "$T/serve.conf" <<C
role = "serve"
plugin_dir = "$T/plug"
state_dir = "$T/state-serve"
log_file = "$T/serve.log"
plugin "transport-http" { listen = {"127.0.0.1:0"} max_body = 1048576 }
$LM
C
"$ENGYD" -c "$T/serve.conf" 2> "$T/serve.stderr" &
SPID=$!
PIDS="$PIDS $SPID"
wait_for "$T/serve.log" "event=ready" 60 || fail "serve: $(cat "$T/serve.log" "$T/serve.stderr")"
SPORT=$(sed -n 's/.*inst=transport-http event=listen .*port=\([0-9]*\).*/\1/p' "$T/serve.log" | head -1)
# tool FILE: from a response frame, the /generate body, the proofs
# (one per line) and the commitment's numbers.
tool() {
	node -e '
		const fs = require("fs");
		const m = JSON.parse(fs.readFileSync(process.argv[1]));
		const t = m.commitment.toploc;
		fs.writeFileSync(process.argv[2] + ".body", JSON.stringify({
			input_ids: t.prompt_ids, return_hidden_states: true,
			sampling_params: { max_new_tokens: t.n_tokens, temperature: 0 } }));
		fs.writeFileSync(process.argv[2] + ".proofs", t.proofs.join("\n") + "\n");
		fs.writeFileSync(process.argv[2] + ".ids",
			[...t.prompt_ids, ...m.commitment.output_token_ids].join(" "));
		console.log(t.prompt_ids.length, t.n_tokens, t.topk);' "$1" "$2"
}
# rows JSON OUT: meta_info.hidden_states as little-endian f32 rows
rows() {
	node -e '
		const fs = require("fs");
		const hs = JSON.parse(fs.readFileSync(process.argv[1])).meta_info.hidden_states;
		const rows = hs.map((e, i) => (i === 0 ? e[e.length - 1] : e));
		fs.writeFileSync(process.argv[2], Buffer.from(new Float32Array(rows.flat()).buffer));' "$1" "$2"
}
verify() {  # what rows proofs hidden [prefill]
	"$ENGYCTL" toploc verify --topk 128 --dbs 32 --hidden "$4" --dtype f32 \
		--prefill "${5:-0}" --proofs "$3" --max-mismatches 40 --min-pass 0.99 "$2" \
		> "$T/verify.out" 2>&1
}
for i in 1 2; do
	set -- $(tool "$T/out-main/resp-$i.json" "$T/p$i")
	curl -s -o "$T/p$i.gen" --data-binary @"$T/p$i.body" "http://127.0.0.1:$SPORT/generate" ||
		fail "serve /generate"
	rows "$T/p$i.gen" "$T/p$i.rows"
	verify "response $i" "$T/p$i.rows" "$T/p$i.proofs" 128 ||
		fail "response $i: verify exit $?: $(cat "$T/verify.out")"
done
# The check has teeth: the rows of another prompt do not pass.
verify "swapped" "$T/p1.rows" "$T/p2.proofs" 128 && fail "proofs of another request passed"
ok "the proofs of a streamed and a plain request pass engyctl toploc verify on the serve's rows"

# --- backend-sglang: the production path, on that same serve over HTTP ---
if [ -f "$T/plug/backend-sglang.so" ]; then
	SURL="http://127.0.0.1:$SPORT"
	conf sgl 'plugin "backend-sglang" { serve_urls = {"'"$SURL"'"} }'
	export GW_META=1 EXP_TOTAL=8 EXP_LEGS=1 EXP_SHARE=8 EXP_SERVE_URLS="$SURL" \
		EXP_MAX_OUTPUT=400
	gw sglang
	MODEL=test-model MAX_INFLIGHT=8 MAX_INPUT_TOKENS=300 MAX_OUTPUT_TOKENS=400 miner sgl
	wait_for "$T/gw-sglang.out" "kill-serve" 60 || fail "sglang scenario: $(cat "$T/gw-sglang.out")"
	# backend-sglang drops the stream and posts /abort_request: the serve
	# ends the request at the first of the two
	RID=$(sed -n 's/.*corr_id=c-abort rid=\(engy-[0-9a-f]*\) .*/\1/p' "$T/sgl.log" | head -1)
	grep -q "inst=test-lm event=finish rid=$RID finish=3 " "$T/serve.log" &&
		grep -q 'event=abort_request prefix_len=37 ' "$T/serve.log" ||
		fail "the serve did not abort $RID: $(grep -e abort -e "$RID" "$T/serve.log")"
	kill -TERM "$SPID"
	wait "$SPID" || true
	touch "$T/out-sglang/serve-killed"
	gw_wait sglang 180
	stop_miner sgl
	unset EXP_SERVE_URLS
	export EXP_MAX_OUTPUT=80
	ok "backend-sglang: the default worker name hashes its serve URL; a cancel aborts at the serve"
else
	kill -TERM "$SPID"
	skip_part "backend-sglang in the miner: backend-sglang.so not built"
fi

# --- an sglang stand-in (fake_sglang.mjs): a full cache hit, no hidden
# states ---
if [ -f "$T/plug/backend-sglang.so" ]; then
	tokenizer "$T/model2" 1000
	for mode in fold nohidden; do
		rm -f "$T/fake.port"
		node "$top_srcdir/tests/integration/fake_sglang.mjs" serve "$T/fake.port" 128 \
			"$([ $mode = fold ] && echo fullhit || echo nohidden)" > "$T/fake-$mode.out" 2>&1 &
		FPID=$!
		PIDS="$PIDS $FPID"
		i=0
		until [ -s "$T/fake.port" ]; do
			i=$((i + 1)); [ $i -le 100 ] || fail "fake sglang did not start"; sleep 0.05
		done
		SURL="http://127.0.0.1:$(cat "$T/fake.port")"
		conf "f$mode" 'plugin "backend-sglang" { serve_urls = {"'"$SURL"'"} }'
		export GW_META=1 EXP_TOTAL=8 EXP_LEGS=1 EXP_SHARE=8 EXP_SERVE_URLS="$SURL" \
			EXP_CKPT="$T/model2" EXP_TESTLM=0 EXP_FOLD=$([ $mode = fold ] && echo 1 || echo 0)
		gw $mode
		MODEL=test-model MAX_INFLIGHT=8 MAX_INPUT_TOKENS=300 MAX_OUTPUT_TOKENS=80 \
			ENGY_CHECKPOINT="$T/model2" miner "f$mode"
		gw_wait $mode 180
		stop_miner "f$mode"
		kill "$FPID"
	done
	unset EXP_SERVE_URLS EXP_FOLD
	export EXP_CKPT="$T/model" EXP_TESTLM=1
	ok "backend-sglang on an sglang stand-in: the folded first token, a serve without hidden states"

	# tool calls end to end, on a serve that writes one
	node "$GWJS" "$PEERS" toolserve "$T" > "$T/toolserve.out" 2>&1 &
	PIDS="$PIDS $!"
	wait_for "$T/toolserve.out" "listening port=" 60 || fail "toolserve: $(cat "$T/toolserve.out")"
	SURL="http://127.0.0.1:$(sed -n 's/^listening port=//p' "$T/toolserve.out")"
	conf tools 'plugin "backend-sglang" { serve_urls = {"'"$SURL"'"} stream = false }'
	export GW_META=1 EXP_TOTAL=8 EXP_LEGS=1 EXP_SHARE=8 EXP_SERVE_URLS="$SURL" EXP_TESTLM=0 \
		EXP_MAX_INPUT=4000 EXP_MAX_OUTPUT=400
	gw tools
	MODEL=test-model MAX_INFLIGHT=8 MAX_INPUT_TOKENS=4000 MAX_OUTPUT_TOKENS=400 \
		ENGY_CHECKPOINT="$T/model" miner tools
	gw_wait tools 180
	stop_miner tools
	export EXP_MAX_INPUT=300 EXP_MAX_OUTPUT=80
	grep -q 'generate rid=engy-[0-9a-f]\{32\} n_input=[0-9]* hidden=true text=false tools=true' \
		"$T/toolserve.out" || fail "the serve's view: $(cat "$T/toolserve.out")"
	unset EXP_SERVE_URLS
	export EXP_TESTLM=1
	ok "the serve gets input_ids (never text) with the tools rendered, a rid and hidden states"
else
	skip_part "the serve's input_ids and hidden states: backend-sglang.so not built"
fi

# --- backend-ref: a real (generated) Qwen3 checkpoint, in process ---
if [ -f "$T/plug/backend-ref.so" ]; then
	"$ENGYCTL" mkmodel --arch qwen3 --size small --seed 7 --out "$T/qwen" --quiet ||
		fail "mkmodel"
	conf ref 'plugin "backend-ref" { checkpoint = "'"$T/qwen"'" threads = 1 max_batch = 2 }'
	export GW_META=1 EXP_TOTAL=8 EXP_LEGS=1 EXP_SHARE=8 EXP_CKPT="$T/qwen" EXP_TESTLM=0 \
		EXP_MAX_INPUT=229376 EXP_MAX_OUTPUT=32768 EXP_MAX_TOKENS=40
	gw proof
	MODEL=test-model MAX_INFLIGHT=8 miner ref
	gw_wait proof 120
	stop_miner ref
	grep -q 'event=miner_prepared .* chat_template=qwen3 ' "$T/ref.log" ||
		fail "the checkpoint's template: $(grep prepared "$T/ref.log")"
	for i in 1 2; do
		set -- $(tool "$T/out-proof/resp-$i.json" "$T/r$i")
		np=$1 nt=$2
		ids=$(cat "$T/r$i.ids")
		# every position of prompt + output but the last; rows from the
		# last prompt position on are the generated tokens'
		"$ENGYCTL" ref --checkpoint "$T/qwen" --ids "${ids% *}" --threads 1 \
			--hidden "$T/r$i.rows" > /dev/null 2>&1 || fail "engyctl ref"
		verify "ref $i" "$T/r$i.rows" "$T/r$i.proofs" 512 $((np - 1)) ||
			fail "backend-ref response $i: verify exit $?: $(cat "$T/verify.out")"
		# greedy: the reference run of the prompt generates the same ids
		want=$(echo "$ids" | tr ' ' '\n' | tail -n "$nt" | tr '\n' ' ')
		got=$("$ENGYCTL" ref --checkpoint "$T/qwen" --threads 1 --ignore-eos \
			--ids "$(echo "$ids" | tr ' ' '\n' | head -n "$np" | tr '\n' ' ')" \
			--generate "$nt" 2>/dev/null)
		[ "$(echo $got)" = "$(echo $want)" ] || fail "ref $i: ids differ: $got / $want"
	done
	ok "backend-ref in the miner: greedy ids match engyctl ref; proofs pass on its recomputed rows"
else
	skip_part "backend-ref in the miner: backend-ref.so not built"
fi

# Every engyd run here, refused ones included, left no sanitizer report.
if grep -l 'Sanitizer' "$T"/*.stderr 2>/dev/null; then
	fail "a sanitizer report: $(grep -h -A5 Sanitizer "$T"/*.stderr | head -20)"
fi

# --- zero retention: the key is in no log ---
if grep -rqF "$KEY" "$T"/*.log "$T"/*.stderr; then
	fail "MINER_KEY appears in a log"
fi
ok "MINER_KEY appears in no log line"
echo "$N_OK passed, 0 failed"
