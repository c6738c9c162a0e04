#!/bin/sh
# SPDX-License-Identifier: MIT
# The GEMM audit trace through the serve (specs/serve.md, "GEMM audit
# trace"): engyd serving sglang's API with backend-ref on a tiny mkmodel
# checkpoint.  /generate with return_gemm_trace answers meta_info.gemm
# (without it: no member); streamed, the final event carries the same
# member; POST /engy/gemm_open answers a challenge with an opening whose
# binding and Merkle paths lead to that member's gemm root and which
# engy_ga_check() passes against the checkpoint's weights (gemm_verify,
# lib/gemm); backend-sglang sends the extension, parses the member and
# opens through the same endpoint; refusals answer 404/400; a memory cap
# evicts the older trace, counted in /metrics, and its rid answers 404.
# Oracle: the spec root is `engyctl model-spec build`'s model root (lib/model,
# checked independently by tests/ref/model_commitment.py); the sampling hash
# is recomputed here in node from specs/gemm-audit.md's byte layout; paths
# and roots are engy's own lib/gemm (self-consistency with the member); the
# products are checked in fp64 against the checkpoint's own weights.
. "$top_srcdir/tests/integration/lib.sh"
command -v curl >/dev/null || fail "curl is required"
REF="$top_builddir/plugins/backend-ref/.libs/backend-ref.so"
SGL="$top_builddir/plugins/backend-sglang/.libs/backend-sglang.so"
DRIVE="$top_builddir/tests/integration/sgl_drive"
VERIFY="$top_builddir/tests/integration/gemm_verify"
if [ ! -f "$REF" ] || ! command -v node >/dev/null; then
	skip_or_fail "backend-ref or node not available"
fi
[ -x "$VERIFY" ] && [ -x "$DRIVE" ] && [ -f "$SGL" ] || fail "gemm_verify, sgl_drive or backend-sglang not built"

"$ENGYCTL" mkmodel --arch qwen3-moe --size tiny --seed 5 --out "$T/model" --quiet ||
	fail "engyctl mkmodel"
"$ENGYCTL" model-spec build "$T/model" > "$T/spec.json" || fail "model-spec build"
ROOT=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).model_root)' "$T/spec.json")
[ ${#ROOT} = 64 ] || fail "no model_root: $(head -c 200 "$T/spec.json")"
make_plugin_dir "$T/plug"

start_serve() {  # name [backend-ref options]
	cat > "$T/$1.conf" <<C
role = "serve"
plugin_dir = "$T/plug"
state_dir = "$T/$1.state"
log_file = "$T/$1.log"
log_level = "debug"
metrics_listen = "127.0.0.1:0"
shutdown_timeout = 10
plugin "transport-http" { listen = {"127.0.0.1:0"} }
plugin "backend-ref" { checkpoint = "$T/model" threads = 2 ${2:-} }
C
	"$ENGYD" --no-dlclose -c "$T/$1.conf" 2> "$T/$1.stderr" &
	PIDS="$PIDS $!"
	wait_for "$T/$1.log" "event=ready" 20 || fail "$1: no ready line: $(cat "$T/$1.log" "$T/$1.stderr")"
	PORT=$(sed -n 's/.*inst=transport-http event=listen .*port=\([0-9]*\).*/\1/p' "$T/$1.log" | head -1)
	MPORT=$(sed -n 's/.*event=metrics_listen .*port=\([0-9]*\).*/\1/p' "$T/$1.log" | head -1)
	U="http://127.0.0.1:$PORT"
}
post() {  # path body out -> HTTP code
	curl -s -o "$3" -w '%{http_code}' --data-binary "$2" "$U$1"
}
js() {  # expression over the JSON in file $2 (as j)
	node -e 'const j=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); const v=('"$1"'); console.log(typeof v==="string"?v:JSON.stringify(v))' "$2"
}

start_serve a
grep -q "event=gemm_ready spec_root=$ROOT source=checkpoint" "$T/a.log" ||
	fail "backend-ref's spec root is not model-spec's: $(grep gemm_ready "$T/a.log")"
ok "backend-ref computed the checkpoint's model root at load ($ROOT)"

B='{"input_ids":[10,20,30,40,50],"sampling_params":{"temperature":0.8,"top_p":0.9,"top_k":30,"sampling_seed":7,"max_new_tokens":8},"rid":"g1","return_gemm_trace":true}'
CODE=$(post /generate "$B" "$T/g1")
[ "$CODE" = 200 ] || fail "generate: $CODE $(head -c 300 "$T/g1")"
js 'j.meta_info.gemm' "$T/g1" > "$T/m1"
N=$(js 'j.meta_info.completion_tokens' "$T/g1")
[ "$(js 'j.hashing' "$T/m1")" = engy-ga1 ] && [ "$(js 'j.rid' "$T/m1")" = g1 ] &&
	[ "$(js 'j.spec_root' "$T/m1")" = "$ROOT" ] && [ "$(js 'j.n_prompt' "$T/m1")" = 5 ] &&
	[ "$(js 'j.n_tokens' "$T/m1")" = $((5 + N)) ] &&
	[ "$(js 'j.gemm_root.length' "$T/m1")" = 64 ] || fail "member: $(cat "$T/m1")"
# specs/gemm-audit.md: SHA-256(temperature f64 LE, top_p f64 LE, top_k i32
# LE, seed u64 LE, has_seed u8, max_new_tokens u32 LE)
SAMP=$(node -e '
const b=Buffer.alloc(33); b.writeDoubleLE(0.8,0); b.writeDoubleLE(0.9,8);
b.writeInt32LE(30,16); b.writeBigUInt64LE(7n,20); b.writeUInt8(1,28); b.writeUInt32LE(8,29);
console.log(require("crypto").createHash("sha256").update(b).digest("hex"))')
[ "$(js 'j.sampling' "$T/m1")" = "$SAMP" ] || fail "sampling $(js 'j.sampling' "$T/m1") != $SAMP"
ok "return_gemm_trace: meta_info.gemm with the checkpoint's root, the counts and the sampling hash"

CODE=$(post /generate '{"input_ids":[10,20,30,40,50],"sampling_params":{"temperature":0,"max_new_tokens":4}}' "$T/g0")
[ "$CODE" = 200 ] && [ "$(js 'j.meta_info.gemm === undefined' "$T/g0")" = true ] || fail "member without asking: $(head -c 300 "$T/g0")"
ok "without return_gemm_trace: no member"

# Streamed: the final event has the member, the same root as unstreamed.
post /generate '{"input_ids":[3,4,5],"sampling_params":{"temperature":0,"max_new_tokens":6},"rid":"s1","return_gemm_trace":true}' "$T/u1" > /dev/null
post /generate '{"input_ids":[3,4,5],"sampling_params":{"temperature":0,"max_new_tokens":6},"rid":"s2","return_gemm_trace":true,"stream":true}' "$T/s2" > /dev/null
grep '^data: {' "$T/s2" | tail -1 | sed 's/^data: //' > "$T/s2.last"
[ "$(js 'j.meta_info.gemm.gemm_root' "$T/s2.last")" = "$(js 'j.meta_info.gemm.gemm_root' "$T/u1")" ] &&
	[ "$(grep -c '"gemm"' "$T/s2")" = 1 ] || fail "streamed member: $(tail -c 400 "$T/s2")"
ok "streamed: only the final event carries meta_info.gemm, with the same gemm root"

# An auditor's challenge: the seed from the member's trace root (no TOPLOC
# member), the request id and a fresh nonce; every layer and lm_head, up
# to 4 positions each.  The opening must lead to the member's gemm root
# and pass engy_ga_check() against the checkpoint's own weights.
NONCE=$(node -e 'console.log(require("crypto").randomBytes(32).toString("hex"))')
"$VERIFY" challenge "$T/m1" "$NONCE" req-g1 "$T/model" > "$T/ch" || fail "challenge"
CH=$(cat "$T/ch")
IDS=$(js '[10,20,30,40,50].concat(j.output_ids).join(",")' "$T/g1")
CODE=$(post /engy/gemm_open '{"rid":"g1","challenge":'"$CH"'}' "$T/o1")
[ "$CODE" = 200 ] || fail "gemm_open: $CODE $(head -c 300 "$T/o1")"
"$VERIFY" "$T/m1" "$T/o1" "$T/ch" "$IDS" "$ROOT" "$T/model" req-g1 > "$T/v1" 2>&1 || fail "verify: $(cat "$T/v1")"
ok "/engy/gemm_open: $(tr '\n' ' ' < "$T/v1")"
# The same opening against other weights (the same model in INT4) fails:
# the check reads the weights, not just the paths.
"$ENGYCTL" mkmodel --arch qwen3-moe --size tiny --seed 5 --quant int4 --out "$T/int4" --quiet ||
	fail "engyctl mkmodel int4"
if "$VERIFY" "$T/m1" "$T/o1" "$T/ch" "$IDS" "$ROOT" "$T/int4" req-g1 > "$T/v1b" 2>&1; then
	fail "an opening passed against INT4 weights: $(cat "$T/v1b")"
fi
grep -q "engy_ga_check: 1 " "$T/v1b" || fail "INT4: not a cheat verdict: $(cat "$T/v1b")"
ok "against INT4 weights the same opening is a cheat ($(grep -o 'engy_ga_check: .*' "$T/v1b"))"
grep -q "event=gemm_replay_diverged" "$T/a.log" && fail "a replay diverged"

CODE=$(post /engy/gemm_open '{"rid":"nope","challenge":'"$CH"'}' "$T/o2")
[ "$CODE" = 404 ] || fail "unknown rid: $CODE"
CODE=$(post /engy/gemm_open '{"rid":"g1","challenge":{"nonce":"00","cells":[[0,0]]}}' "$T/o3")
[ "$CODE" = 400 ] || fail "bad challenge: $CODE"
CODE=$(post /engy/gemm_open '{"rid":"g1"}' "$T/o4")
[ "$CODE" = 400 ] || fail "no challenge: $CODE"
CODE=$(curl -s -o /dev/null -w '%{http_code}' "$U/engy/gemm_open")
[ "$CODE" = 405 ] || fail "GET: $CODE"
ok "refusals: unknown rid 404, malformed challenge 400, GET 405"

# backend-sglang against this serve: the extension sent, the member read
# (its rid names the serve), the opening fetched through the endpoint.
"$DRIVE" "$SGL" serve_urls="$U" -- gen 10,20,30,40,50 6 gemm=1 rid=sg1 hidden=0 lp=0 \
	> "$T/d1" 2> "$T/drive.err" || fail "sgl_drive: $(cat "$T/drive.err")"
js 'j.gemm' "$T/d1" > "$T/m3"
"$VERIFY" challenge "$T/m3" "$NONCE" req-sg1 "$T/model" > "$T/ch3" || fail "challenge (sglang)"
"$DRIVE" "$SGL" serve_urls="$U" -- open 0/sg1 "$(cat "$T/ch3")" > "$T/d2" 2> "$T/drive.err" ||
	fail "sgl_drive: $(cat "$T/drive.err")"
[ "$(js 'j.rid' "$T/m3")" = 0/sg1 ] && [ "$(js 'j.spec_root' "$T/m3")" = "$ROOT" ] &&
	[ "$(js 'j.n_tokens' "$T/m3")" = "$((5 + $(js 'j.ids.length' "$T/d1")))" ] || fail "backend-sglang member: $(cat "$T/d1")"
[ "$(js 'j.rc' "$T/d2")" = 0 ] || fail "backend-sglang open: $(cat "$T/d2")"
js 'j.opening' "$T/d2" > "$T/o5"
IDS=$(js '[10,20,30,40,50].concat(j.ids).join(",")' "$T/d1")
"$VERIFY" "$T/m3" "$T/o5" "$T/ch3" "$IDS" "$ROOT" "$T/model" req-sg1 > "$T/v5" 2>&1 || fail "verify (sglang): $(cat "$T/v5")"
"$DRIVE" "$SGL" serve_urls="$U" -- open 0/nope "$CH" \; open 7/sg1 "$CH" \; gen 1,2,3 2 rid=sg2 hidden=0 lp=0 > "$T/drive2" 2> "$T/drive2.err" ||
	fail "sgl_drive: $(cat "$T/drive2.err")"
[ "$(sed -n 1p "$T/drive2")" = '{"rc":-2,"opening":null}' ] && [ "$(sed -n 2p "$T/drive2")" = '{"rc":-2,"opening":null}' ] &&
	sed -n 3p "$T/drive2" | grep -q '"gemm":null' || fail "backend-sglang refusals: $(cat "$T/drive2")"
ok "backend-sglang: member parsed (rid 0/sg1), opening through the serve passes engy_ga_check; unknown rids -ENOENT; not asked: no member"

# The memory cap: room for one and a half traces of this size.
BYTES=$(grep -o 'event=gemm_kept rid=g1 bytes=[0-9]*' "$T/a.log" | head -1 | sed 's/.*=//')
[ -n "$BYTES" ] || fail "no gemm_kept line"
start_serve b "gemm_max_bytes = $((BYTES + BYTES / 2))"
post /generate "$B" "$T/b1" > /dev/null
post /generate "$(printf '%s' "$B" | sed 's/"g1"/"g2"/')" "$T/b2" > /dev/null
[ "$(js 'j.meta_info.gemm.rid' "$T/b2")" = g2 ] || fail "second member: $(head -c 300 "$T/b2")"
wait_for "$T/b.log" "event=gemm_evicted rid=g1" 10 || fail "no eviction: $(grep gemm "$T/b.log")"
M=$(curl -fsS "http://127.0.0.1:$MPORT/metrics") || fail "metrics fetch"
printf '%s\n' "$M" | grep -q '^engy_backend_ref_gemm_evicted_total 1$' || fail "eviction not counted: $(printf '%s\n' "$M" | grep gemm)"
printf '%s\n' "$M" | grep -q '^engy_backend_ref_gemm_traces 1$' || fail "traces gauge: $(printf '%s\n' "$M" | grep gemm)"
CODE=$(post /engy/gemm_open '{"rid":"g1","challenge":'"$CH"'}' "$T/o6")
[ "$CODE" = 404 ] || fail "evicted rid: $CODE"
CODE=$(post /engy/gemm_open '{"rid":"g2","challenge":'"$CH"'}' "$T/o7")
[ "$CODE" = 200 ] || fail "kept rid: $CODE"
ok "gemm_max_bytes: the older trace evicted (logged, engy_backend_ref_gemm_evicted_total 1), its rid 404, the newer opens"
grep -E 'input_ids|output_ids|\[10,20' "$T/a.log" "$T/b.log" && fail "token ids in a log"
ok "no token ids in the logs"
