#!/bin/sh
# SPDX-License-Identifier: MIT
# backend-sglang end to end on 127.0.0.1: the built module, driven on a
# real loop (tests/integration/sgl_drive), against a scripted sglang serve
# in node (fake_sglang.mjs, whose deterministic model predicts every token,
# hidden row and logprob) and against engy's own serve role with the
# scripted backend test-lm.  Streaming, chunked generation with the
# one-token overlap, radix-cache hits, cancel as /abort_request, several
# serves, info, prefill, and every failure: serve down, slow, garbage, no
# hidden states, HTTP errors, errors inside the stream, a cut stream.
# Oracle: fake_sglang.mjs, a scripted serve whose deterministic model
# predicts every token, row and logprob (written from sglang's API, not
# from engy's code); the engy-serve leg is self-consistency.
. "$top_srcdir/tests/integration/lib.sh"
if ! command -v node >/dev/null || ! command -v curl >/dev/null; then
	skip_or_fail "node and curl are required for the fake sglang serve"
fi
FAKE="$top_srcdir/tests/integration/fake_sglang.mjs"
SO="$top_builddir/plugins/backend-sglang/.libs/backend-sglang.so"
DRIVE="$top_builddir/tests/integration/sgl_drive"
[ -f "$SO" ] && [ -x "$DRIVE" ] || fail "backend-sglang.so or sgl_drive not built"

start_fake() {  # name [default modes]
	node "$FAKE" serve "$T/$1.port" 8 "${2:-}" 2> "$T/$1.err" &
	PIDS="$PIDS $!"
	wait_for "$T/$1.port" '[0-9]' 10 || fail "fake serve $1 did not start: $(cat "$T/$1.err")"
}
start_fake a
start_fake b
start_fake slowserve slowev
start_fake shortpf shortpf
A="http://127.0.0.1:$(cat "$T/a.port")"
B="http://127.0.0.1:$(cat "$T/b.port")"
SLOW="http://127.0.0.1:$(cat "$T/slowserve.port")"
SHORTPF="http://127.0.0.1:$(cat "$T/shortpf.port")"

N=0
# drive [option=value ...] -- COMMAND: one JSON line per result in $OUT
drive() {
	N=$((N + 1))
	OUT="$T/out.$N"
	"$DRIVE" "$SO" "$@" > "$OUT" 2> "$T/err.$N" ||
		fail "sgl_drive $*: exit $?: $(tail -5 "$T/err.$N")"
}
# load [LINE]: the fields of a result line (1 by default) into R_<field>;
# get FIELD [LINE] sets $g to one of them.
LOADED=
load() {
	if [ "$LOADED" != "$OUT:${1:-1}" ]; then
		eval "$(sed -n "${1:-1}p" "$OUT" | node "$FAKE" shell)"
		LOADED="$OUT:${1:-1}"
	fi
}
get() {
	load "${2:-1}"
	eval "g=\$R_$1"
}
expect() {  # IDS MAX [OPTS]
	node "$FAKE" expect "$@"
}
same_as() {  # what expected-json [line]
	want=$2
	eval "$(printf '%s' "$want" | node "$FAKE" shell | sed 's/^R_/W_/')"
	for f in ids rowhash lphash; do
		eval "w=\$W_$f"
		get "$f" "${3:-1}"
		[ "$g" = "$w" ] || fail "$1: $f is $g, want $w ($(sed -n "${3:-1}p" "$OUT"))"
	done
}
is() {  # what field value [line]
	get "$2" "${4:-1}"
	[ "$g" = "$3" ] || fail "$1: $2 is '$g', want '$3' ($(sed -n "${4:-1}p" "$OUT"))"
}
has() {  # what field needle
	get "$2"
	case "$g" in *"$3"*) ;; *) fail "$1: $2 '$g' lacks '$3'";; esac
}
calls() {  # serve-url rid-prefix: /generate calls the fake logged
	curl -s "$1/_log" | node -e '
		let t = ""; process.stdin.on("data", c => t += c).on("end", () => {
		const l = JSON.parse(t).generate.filter(g => g.rid.startsWith(process.argv[1]));
		console.log(JSON.stringify(l.map(g => [g.rid, g.n_input, g.max_new_tokens,
			g.stream, g.hidden, g.logprob, g.logprob_start_len]))); })' "$2"
}
aborted() {  # serve-url rid: wait until the fake logged its /abort_request
	i=0
	while ! curl -s "$1/_log" | grep -q "\"aborts\":\[[^]]*\"$2\""; do
		i=$((i + 1)); [ $i -le 600 ] || return 1; sleep 0.05
	done
}

OPTS="serve_urls=$A connect_timeout_s=2"
W=$(expect 5,6,7 12)

# --- generation, streamed and not -------------------------------------------
drive $OPTS stream=false -- gen 5,6,7 12 rid=plain-1
same_as "one call" "$W"
is "one call" status 0; is "one call" finish 2; is "one call" calls 1
is "one call" prompt 3; is "one call" completion 12; is "one call" rows 12
is "one call" hidden 8; is "one call" fold 0
[ "$(calls "$A" plain-1)" = '[["plain-1",3,12,false,true,true,null]]' ] ||
	fail "one call: the serve saw $(calls "$A" plain-1)"
ok "non-streamed: tokens, every hidden row and logprob exact; input_ids, rid, hidden states, logprobs asked"

drive $OPTS -- gen 5,6,7 12
same_as "random rid" "$W"
curl -s "$A/_log" | grep -Eq '"rid":"engy-[0-9a-f]{32}"' || fail "no engy-<32 hex> rid"
ok "without a rid: engy-<32 hex> (fixed length, so prefix-free)"

drive $OPTS stream=true stream_flush_s=0.05 -- gen 5,6,7 6 rid=m_slowev-s1
same_as "streamed" "$(expect 5,6,7 6)"
get calls; C=$g
# 80 ms apart, each event is a call of its own unless the loop was held up
# past two of them (a loaded machine); never more than one per token.
[ "$C" -ge 2 ] && [ "$C" -le 6 ] || fail "streamed: $C on_tokens calls for 6 tokens 80 ms apart"
# 5 s: the six events (80 ms apart) are one call even if the stand-in's
# timers run late; the last token flushes at once, so it costs nothing.
drive $OPTS stream=true stream_flush_s=5 -- gen 5,6,7 6 rid=m_slowev-s2
same_as "coalesced" "$(expect 5,6,7 6)"
is "coalesced" calls 1
ok "streamed: same result; tokens coalesced for stream_flush_s ($C calls at 0.05 s, 1 at 5 s)"

drive $OPTS -- gen 5,6,7 9 rid=m_incr-i1 ";" gen 5,6,7 9 rid=m_lastonly_slowev-i2 \
	";" gen 5,6,7 9 rid=m_json-i3
W9=$(expect 5,6,7 9)
same_as "incremental stream" "$W9" 1
same_as "hidden states only at the end" "$W9" 2
is "hidden states only at the end" calls 1 2
same_as "JSON body for a stream" "$W9" 3
ok "incremental (delta) events, hidden states only in the final event, a JSON answer to a stream"

# --- chunked generation -------------------------------------------------------
W30=$(expect 5,6,7 30)
for st in false true; do
	drive $OPTS stream=$st gen_chunk=7 -- gen 5,6,7 30 rid=ch-$st
	same_as "chunked ($st)" "$W30"
	is "chunked ($st)" finish 2; is "chunked ($st)" completion 30
	L=$(calls "$A" ch-$st)
	[ "$L" = "[[\"ch-$st\",3,7,$st,true,true,null],[\"ch-$st-c1\",9,8,$st,true,true,null],[\"ch-$st-c2\",16,8,$st,true,true,null],[\"ch-$st-c3\",23,8,$st,true,true,null],[\"ch-$st-c4\",30,3,$st,true,true,null]]" ] ||
		fail "chunked ($st): calls $L"
done
ok "gen_chunk 7 of 30: five calls, each re-sending all but the last kept token and asking one more; same tokens and rows as one call"

# A GEMM trace asked of a serve without engy's extension (the fake, like
# sglang, ignores the field): served as ever, in one call whatever
# gen_chunk (a trace covers one call), and no member (specs/serve.md §2.6).
drive $OPTS gen_chunk=7 -- gen 5,6,7 30 rid=gt gemm=1
same_as "traced, stock serve" "$W30"
is "traced, stock serve" finish 2
[ "$(calls "$A" gt)" = '[["gt",3,30,true,true,true,null]]' ] || fail "traced: calls $(calls "$A" gt)"
grep -q '"gemm":null' "$OUT" || fail "traced, stock serve: a member: $(cat "$OUT")"
ok "gemm_trace on a serve without the extension: the same 30 tokens in one call, no member"

drive $OPTS gen_chunk=7 -- gen 5,6,7 30 rid=m_stop20-ce
same_as "EOS in a later chunk" "$(expect 5,6,7 30 '{"stop":20}')"
is "EOS in a later chunk" finish 1; is "EOS in a later chunk" matched 2
is "EOS in a later chunk" completion 17
[ "$(calls "$A" m_stop20-ce | grep -o '"m_stop20-ce' | wc -l)" = 3 ] ||
	fail "EOS in a later chunk: $(calls "$A" m_stop20-ce)"
ok "a chunk that stops on EOS ends the generation (finish stop, matched the EOS id)"

drive $OPTS gen_chunk=7 -- gen 5,6,7 20 rid=smp temp=0.7 seed=9
same_as "sampled chunks" "$(expect 5,6,7 20)"
[ "$(calls "$A" smp)" = '[["smp",3,7,true,true,true,null],["smp-c1",10,7,true,true,true,null],["smp-c2",17,6,true,true,true,null]]' ] ||
	fail "sampled chunks: $(calls "$A" smp)"
curl -s "$A/_log" | grep -q '"rid":"smp","n_input":3,"max_new_tokens":7,"stream":true,"hidden":true,"logprob":true,"logprob_start_len":null,"temperature":0.7,"stop_token_ids":null,"sampling_seed":9' ||
	fail "sampled: temperature or seed not sent"
ok "sampled continuations send every kept token and keep all they get (no overlap to regenerate)"

# --- radix cache ----------------------------------------------------------------
drive $OPTS gen_chunk=4 -- gen 5,6,7,8,9 10 rid=m_cached2-rc ";" gen 5,6,7,8,9 6 rid=m_cached99-rc2 \
	";" gen 5,6,7,8,9 6 rid=m_trim-rc3
W10=$(expect 5,6,7,8,9 10)
same_as "cached prefix" "$W10" 1
is "cached prefix" cached 2 1
is "cached over the prompt" cached 5 2
same_as "one-row prefill block" "$(expect 5,6,7,8,9 6)" 3
ok "cached_tokens from the first call only (continuations are cached almost whole), clamped to the prompt; short prefill blocks"

for st in true false; do
	drive $OPTS stream=$st -- gen 5,6,7,8,9 6 rid=m_fullhit-f$st
	same_as "full cache hit" "$(expect 5,6,7,8,9 6 '{"fold":true}')"
	is "full cache hit" fold 1; is "full cache hit" rows 5
	is "full cache hit" completion 6
done
ok "a full radix-cache hit: token 0 has no row and comes alone with rows NULL (fold), the other rows line up"

# --- cancel ---------------------------------------------------------------------
drive $OPTS -- gen 5,6,7 40 rid=m_slowev-cx cancel_after=2
is "cancel mid-stream" status 0; is "cancel mid-stream" finish 3
get completion
[ "$g" -ge 2 ] && [ "$g" -lt 40 ] || fail "cancel: $(cat "$OUT")"
aborted "$A" m_slowev-cx || fail "no /abort_request for m_slowev-cx: $(curl -s "$A/_log")"
drive $OPTS -- gen 5,6,7 4 rid=m_slow-cy cancel_ms=100
is "cancel before a token" finish 3; is "cancel before a token" completion 0
aborted "$A" m_slow-cy || fail "no /abort_request for m_slow-cy"
ok "cancel (from on_tokens, and before any token): on_done once with abort, nothing after; the serve gets /abort_request with the rid"

# --- several serves -------------------------------------------------------------
drive serve_urls=$A,$B connect_timeout_s=2 -- multi 4 5,6,7 5 rid=m_slowev-lif
for l in 1 2 3 4; do same_as "least in flight" "$(expect 5,6,7 5)" $l; done
NA=$(calls "$A" m_slowev-lif | grep -o '"m_slowev-lif' | wc -l)
NB=$(calls "$B" m_slowev-lif | grep -o '"m_slowev-lif' | wc -l)
[ "$NA" = 2 ] && [ "$NB" = 2 ] || fail "least in flight: $NA on a, $NB on b"
ok "several serves: four requests at once go two and two (least in flight)"

# --- failures -------------------------------------------------------------------
drive serve_urls=http://127.0.0.1:1 connect_timeout_s=2 -- gen 5,6,7 4
is "serve down" status -111; is "serve down" finish 4
has "serve down" error "serve unreachable"
# The fake answers m_slow after 3 s: the request ends on the timer, after
# max_request_s and before that answer (sgl_drive's ms: generate() to
# on_done on its loop, not counting its own start).
drive serve_urls=$A connect_timeout_s=0.5 max_request_s=0.5 -- gen 5,6,7 4 rid=m_slow-t1
is "slow serve" status -110; has "slow serve" error "timed out"
get ms
[ "$g" -ge 500 ] && [ "$g" -lt 3000 ] || fail "slow serve: timed out after $g ms (max_request_s 0.5 s, the serve answers at 3 s)"
ok "serve down: -ECONNREFUSED; slow serve: -ETIMEDOUT at max_request_s ($g ms)"

drive $OPTS -- gen 5,6,7 4 rid=m_garbage-g1 ";" gen 5,6,7 4 rid=m_http500-g2 \
	";" gen 5,6,7 4 rid=m_streamerr-g3 ";" gen 5,6,7 6 rid=m_cut-g4
is "garbage" status -74 1; sed -n 1p "$OUT" | grep -q 'malformed' || fail "garbage: $(sed -n 1p "$OUT")"
is "HTTP 500" status -5 2; is "HTTP 500" error "serve returned HTTP 500: internal boom" 2
is "error event" status -5 3; is "error event" error "serve error: stream boom" 3
is "cut stream" status -71 4; sed -n 4p "$OUT" | grep -q 'ended the stream' || fail "cut: $(sed -n 4p "$OUT")"
ok "garbage, HTTP 500, an error event inside the stream, a cut stream: each a clear on_done error"

NOHS="serve returned no hidden states: start sglang with --enable-return-hidden-states"
drive $OPTS -- gen 5,6,7 4 rid=m_nohidden-h1 ";" gen 5,6,7 4 rid=m_nohidden-h2 stream=false \
	";" gen 5,6,7 4 rid=m_hsoff-h3 ";" gen 5,6,7 4 rid=m_nohidden-h4 hidden=0
for l in 1 2 3; do
	sed -n ${l}p "$OUT" | grep -q -- "$NOHS" || fail "no hidden states ($l): $(sed -n ${l}p "$OUT")"
	get status $l
	[ "$g" -lt 0 ] || fail "no hidden states ($l): status"
done
is "hidden not asked" status 0 4; is "hidden not asked" rows 0 4
ok "no hidden states (streamed, not, sglang's 400): '$NOHS' and how to check"

drive $OPTS max_inflight=2 -- busy 3 5,6,7 4 rid=m_slowev-busy ";" gen 5,6,7 2 'rid=bad"rid'
[ "$(sed -n 1p "$OUT")" = '{"rcs":[0,0,-16]}' ] || fail "busy: $(sed -n 1p "$OUT")"
[ "$(sed -n 2p "$OUT")" = '{"generate_rc":-22}' ] || fail "bad rid: $(sed -n 2p "$OUT")"
ok "max_inflight: -EBUSY past it; a rid with a quote: -EINVAL"

# --- info and prefill -------------------------------------------------------------
mkdir -p "$T/ckpt"
printf '{"architectures":["X"],"text_config":{"hidden_size":8,"vocab_size":1000,"max_position_embeddings":2048,"eos_token_id":2}}' > "$T/ckpt/config.json"
printf '{"eos_token_id":[2,7]}' > "$T/ckpt/generation_config.json"
drive $OPTS checkpoint=$T/ckpt -- info 300
is "info" rc 0; is "info" name fake-served; is "info" path "$T/ckpt"
is "info" hidden 8; is "info" vocab 1000; is "info" max_context 4096
is "info" eos '[2,7,0,0]'
drive $OPTS -- info 300 ";" gen 5,6,7 2 ";" info 0
is "info from the serve" path /models/Fake-Model-1B; is "info from the serve" hidden 0
is "hidden size from the rows" hidden 8 3
drive serve_urls=http://127.0.0.1:1 connect_timeout_s=1 -- info 100
is "info, nothing known" rc -11
ok "info: the checkpoint's config.json (text_config), the serve's model and context, the hidden size from rows"

# --- top_logprobs ------------------------------------------------------------------
# top_logprobs 3 reaches the serve as top_logprobs_num, and each token's 3
# alternatives (the fake's tops(): the token itself first) come to
# on_top_logprobs just before the token, exact, streamed or not, chunked,
# with incremental events; hostile lists fail the generation saying why.
WT=$(expect 5,6,7 30 '{"top":3}' | node "$FAKE" get tophash)
WT9=$(expect 5,6,7 9 '{"top":3}' | node "$FAKE" get tophash)
for st in false true; do
	drive $OPTS checkpoint=$T/ckpt stream=$st gen_chunk=7 -- gen 5,6,7 30 rid=tp-$st top=3 \
		";" gen 5,6,7 9 rid=m_incr-tpi-$st top=3
	same_as "top_logprobs ($st)" "$W30"
	is "top_logprobs ($st)" tophash "$WT"
	same_as "top_logprobs, incremental ($st)" "$W9" 2
	is "top_logprobs, incremental ($st)" tophash "$WT9" 2
done
curl -s "$A/_log" | grep -q '"rid":"tp-true-c2",.*"top":3}' || fail "top_logprobs_num not sent: $(curl -s "$A/_log")"
for m in topbig:vocabulary topunsorted:sorted topmany:logprobs; do
	drive $OPTS checkpoint=$T/ckpt -- gen 5,6,7 5 rid=m_${m%%:*}-tx top=3
	get status; [ "$g" != 0 ] || fail "${m%%:*}: accepted"
	has "${m%%:*}" error "${m#*:}"
done
drive $OPTS -- gen 5,6,7 4 rid=tp-big top=21
[ "$(sed -n 1p "$OUT")" = '{"generate_rc":-22}' ] || fail "top 21: $(sed -n 1p "$OUT")"
ok "top_logprobs 3: top_logprobs_num sent, alternatives exact before each token (streamed or not, chunked, incremental); an id out of the vocabulary, an unsorted or too long list fail the generation; 21 is -EINVAL"

drive $OPTS -- prefill 5,6,7,8
is "prefill" rc 0; is "prefill" rows 4; is "prefill" n_prefill 4; is "prefill" hidden 8
is "prefill" rowhash "$(expect 5,6,7,8 1 '{"prefill":true}' | node "$FAKE" get rowhash)"
curl -s "$A/_log" | grep -q '"n_input":4,"max_new_tokens":1,"stream":false,"hidden":true,"logprob":false,"logprob_start_len":0' ||
	fail "prefill: the call sent"
drive serve_urls=$SHORTPF -- prefill 5,6,7,8
is "prefill, short block" rc -5
ok "prefill: every prompt position's row (logprob_start_len 0 keeps the cache out); a short block is an error"

# --- engy's own serve role ----------------------------------------------------------
make_plugin_dir "$T/plug"
if [ -f "$T/plug/test-lm.so" ] && [ -f "$T/plug/transport-http.so" ]; then
	cat > "$T/serve.conf" <<C
role = "serve"
plugin_dir = "$T/plug"
state_dir = "$T/state"
log_file = "$T/serve.log"
plugin "transport-http" { listen = {"127.0.0.1:0"} }
plugin "test-lm" { model_path = "/models/test-lm" delay_ms = 40 hidden_size = 8 max_context = 256 }
C
	"$ENGYD" -c "$T/serve.conf" 2> "$T/serve.stderr" &
	PIDS="$PIDS $!"
	wait_for "$T/serve.log" "event=ready" 10 || fail "engy serve: $(cat "$T/serve.log" "$T/serve.stderr")"
	PORT=$(sed -n 's/.*inst=transport-http event=listen .*port=\([0-9]*\).*/\1/p' "$T/serve.log" | head -1)
	E="serve_urls=http://127.0.0.1:$PORT connect_timeout_s=2"
	LM=$(node "$FAKE" expect-lm 10,20,30 6)
	drive $E stream=false -- gen 10,20,30 6 rid=e1 ";" gen 10,20,30 6 rid=e2 \
		";" info 300
	same_as "engy serve" "$LM" 1
	same_as "engy serve, streamed" "$LM" 2
	is "engy serve" finish 2 1; is "engy serve" calls 1 1
	is "engy serve info" path /models/test-lm 3; is "engy serve info" name test-lm 3
	# It sends hidden states in the final event only: with rows asked
	# for, tokens wait for theirs; without, they stream.
	is "engy serve, streamed" calls 1 2
	drive $E -- gen 10,20,30 50 rid=e3 cancel_after=2 hidden=0
	is "engy serve cancel" finish 3
	get completion
	[ "$g" -lt 50 ] || fail "engy serve cancel: all 50 tokens came: $(cat "$OUT")"
	wait_for "$T/serve.log" "event=cancel rid=e3" 5 || fail "engy serve: no cancel of e3: $(tail "$T/serve.log")"
	ok "engy's own serve role (test-lm): the same tokens, rows and logprobs streamed or not; cancel reaches its backend"
else
	skip_part "engy's own serve role: test-lm.so or transport-http.so not built"
fi

echo "$N_OK passed, 0 failed"
