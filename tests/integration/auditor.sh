#!/bin/sh
# SPDX-License-Identifier: MIT
# The auditor end to end (specs/auditor.md) on a tiny generated model:
# commitments made by the reference engine (an honest one on the canonical
# checkpoint, a cheat one on its --quant int4 copy claiming the canonical
# root, a malformed one, one with a root the model does not accept) are
# served by a stand-in of the gateway's tee; the auditor recomputes and
# verifies them (verdicts pass, cheat, unproven x2, and pass for a
# commitment generated under a JSON schema by constrained decoding: only
# sampling is masked, the hidden states are the model's; in the store and in
# `engyctl verdicts`), closes a 10 s epoch with no billed traffic (burn),
# signs it, and serves it on the provider API: the payload verifies
# against the master hotkey and `engyctl epoch score` on the published
# aggregates gives back the published result_json byte for byte.
# Before that, the pinned checkpoint: the auditor hashes its checkpoint
# into the Merkle root (specs/model-commitment.md) at start and refuses to
# start, exit status non-zero with the reason in its log, when the root
# pinned for it (its spec_root option, or the store's spec_root for the
# model) is another; with the right pin it starts.  The expected root is
# recomputed by tests/ref/model_commitment.py (an independent
# implementation written from the spec) when /usr/bin/python3 has numpy.
# Oracle: verdicts come from engy's own prover and verifier on engy's
# reference engine (self-consistency: honest = bit-exact recompute, cheat =
# an INT4 copy); the burn epoch's weights follow from specs/scoring.md §3.4
# by hand. Real billed traffic scored into weights the test computes
# itself: scaleout_postgres.sh.
. "$(dirname "$0")/lib.sh"

command -v node >/dev/null || skip_or_fail "no node"
make_plugin_dir "$T/plugins"
export ENGY_PLUGIN_DIR="$T/plugins"
ST="$T/state"
mkdir -p "$ST"
adm() { "$ENGYCTL" admin --state-dir "$ST" "$@"; }

# --- checkpoints and commitments ------------------------------------------
"$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 3 --out "$T/m" --quiet || fail mkmodel
"$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 3 --quant int4 --out "$T/m4" --quiet ||
	fail "mkmodel int4"
HID=$(tr -d " \t\n" < "$T/m/config.json" | sed -n "s/.*\"hidden_size\":\([0-9]*\).*/\1/p")
[ -n "$HID" ] || fail "no hidden_size"
ROOT=$(printf 'devnet tiny seed 3' | sha256sum | cut -c1-64)
OTHER=$(printf 'another root' | sha256sum | cut -c1-64)
PROMPT="10 11 12 13 14 15 16 17 18 19 20 21"
NP=12
NGEN=64
commit() {  # name checkpoint [ref options]
	n=$1 ck=$2
	shift 2
	"$ENGYCTL" ref --checkpoint "$ck" --ids "$PROMPT" --generate $NGEN --ignore-eos \
		--threads 1 --hidden "$T/$n.f32" "$@" > "$T/$n.ids" 2>/dev/null || fail "ref $n"
	set -- "$n"
	"$ENGYCTL" toploc prove --topk 128 --dbs 32 --hidden "$HID" --dtype f32 \
		--prefill $((NP - 1)) "$T/$1.f32" > "$T/$1.proofs" || fail "prove $1"
}
commit honest "$T/m"
commit cheat "$T/m4"
ok "commitments: $NGEN tokens from the canonical and the INT4 checkpoint"
echo '{"type":"object","properties":{"k":{"enum":["a","b"]},"n":{"type":"integer"},"s":{"type":"string","maxLength":8}},"required":["k","n","s"]}' > "$T/schema.json"
commit constrained "$T/m" --json-schema "$T/schema.json" --temperature 1 --seed 9
"$ENGYCTL" ref --checkpoint "$T/m" --ids "$PROMPT" --generate $NGEN --ignore-eos --threads 1 \
	--json-schema "$T/schema.json" --temperature 1 --seed 9 --decode 2>/dev/null |
	sed 's/<|im_end|>$//; s/<|endoftext|>$//' > "$T/constrained.txt" || fail "ref --decode"
node -e 'const v = JSON.parse(require("fs").readFileSync(0, "utf8"));
	if (Object.keys(v).join() !== "k,n,s" || !["a", "b"].includes(v.k) || !Number.isInteger(v.n) ||
	    [...v.s].length > 8) throw new Error("no match");' < "$T/constrained.txt" ||
	fail "constrained output: $(cat "$T/constrained.txt")"
ok "a commitment generated under a JSON schema ($(wc -w < "$T/constrained.ids") tokens, output matches it)"

"$ENGYCTL" keys new --out "$T/master" --seed-hex $(printf 'ee%.0s' $(seq 32)) > /dev/null
"$ENGYCTL" keys new --out "$T/h1" --seed-hex $(printf '01%.0s' $(seq 32)) > /dev/null
"$ENGYCTL" keys new --out "$T/h2" --seed-hex $(printf '02%.0s' $(seq 32)) > /dev/null
ss58() { "$ENGYCTL" keys show "$1" | sed -n 's/^ss58Address: //p' | head -1; }
MASTER=$(ss58 "$T/master"); H1=$(ss58 "$T/h1"); H2=$(ss58 "$T/h2")

node - "$T" "$ROOT" "$OTHER" "$NP" "$H1" "$H2" > "$T/items.json" <<'JS'
const fs = require('fs');
const [T, root, other, np, h1, h2] = process.argv.slice(2);
const prompt = [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21];
function c(name, r) {
	const out = fs.readFileSync(`${T}/${name}.ids`, 'utf8').trim().split(/\s+/).map(Number);
	const proofs = fs.readFileSync(`${T}/${name}.proofs`, 'utf8').trim().split('\n');
	return { model_root: r, output_token_ids: out,
		 toploc: { proofs, topk: 128, decode_batching_size: 32, skip_prefill: true,
			   n_tokens: out.length, prompt_ids: prompt } };
}
let seq = 0;
const it = (id, miner, commitment, probe) => ({ seq: ++seq, request_id: id, miner, model: 'tiny',
	time_ms: Date.now(), is_probe: probe, commitment });
console.log(JSON.stringify({ entries: [
	it('req-honest', h1, c('honest', root), false),
	it('req-cheat', h2, c('cheat', root), false),
	it('req-malformed', h1, { model_root: root, toploc: 'junk' }, true),
	it('req-otherroot', h2, c('honest', other), true),
	it('req-constrained', h1, c('constrained', root), false),
], next: 5 }));
JS

# The tee stand-in (the gateway's GET /internal/v1/tee/sample and POST
# .../ack, specs/gateway.md): the entries once (since=0), then nothing;
# the bearer token is checked; acks are written to a file.
cat > "$T/tee.js" <<'JS'
const fs = require('fs'), http = require('http');
const items = fs.readFileSync(process.argv[2]);
http.createServer((q, s) => {
	if (q.headers.authorization !== 'Bearer tee-secret') { s.writeHead(401); return s.end(); }
	const u = new URL(q.url, 'http://x');
	if (q.method === 'POST' && u.pathname === '/internal/v1/tee/ack') {
		let b = ''; q.on('data', d => b += d);
		return q.on('end', () => { fs.appendFileSync(process.argv[3], b + '\n'); s.end('{}'); });
	}
	s.writeHead(200, { 'content-type': 'application/json' });
	s.end(u.searchParams.get('since') === '0' ? items : '{"entries":[],"next":5}');
}).listen(0, '127.0.0.1', function () { console.log('port=' + this.address().port); });
JS
node "$T/tee.js" "$T/items.json" "$T/acks" > "$T/tee.out" &
PIDS="$PIDS $!"
wait_for "$T/tee.out" port= 10 || fail "tee stand-in"
TEEPORT=$(sed -n 's/port=//p' "$T/tee.out")

adm models put tiny --root "$ROOT" --max-input-tokens 4096 --max-output-tokens 512 \
	--max-request-s 60 --toploc-v 0 --toploc-p 0.99 --score-rate 1000 \
	--qual-ttft-p99-ms 60000 --qual-tpot-p99-ms 60000 > /dev/null || fail "models put"
adm miners register "$H1" --label honest > /dev/null || fail "register h1"
adm miners register "$H2" --label cheat > /dev/null || fail "register h2"

cat > "$T/auditor.conf" <<C
role = "auditor"
state_dir = "$ST"
log_level = "info"
plugin "backend-ref" { checkpoint = "$T/m" threads = 1 name = "tiny" }
plugin "verifier-toploc" { }
plugin "scorer-sn53" { cheat_min_samples = 1 acceptance_min_samples = 1 }
plugin "store-sqlite" { }
plugin "transport-http" { listen = { "127.0.0.1:0" } }
auditor {
  tee_url = "http://127.0.0.1:$TEEPORT/internal/v1/tee/sample"
  sample_ppm = 1000000
  pull_s = 1
  epoch_s = 10
  hotkey_file = "$T/master"
}
C
chmod 600 "$T/master"
"$ENGYD" -t -c "$T/auditor.conf" > /dev/null 2>&1 || fail "engyd -t: $("$ENGYD" -t -c "$T/auditor.conf" 2>&1)"

# --- the pinned checkpoint --------------------------------------------------
SR=$("$ENGYCTL" model-spec build "$T/m" | tr -d ' \t\n' |
	sed -n 's/.*"model_root":"\([0-9a-f]\{64\}\)".*/\1/p')
[ -n "$SR" ] || fail "engyctl model-spec build: no model_root"
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	IR=$(/usr/bin/python3 "$top_srcdir/tests/ref/model_commitment.py" spec "$T/m" |
		tr -d ' \t\n' | sed -n 's/.*"model_root":"\([0-9a-f]\{64\}\)".*/\1/p')
	[ "$IR" = "$SR" ] || fail "the independent root $IR is not engyctl's $SR"
	ok "the checkpoint's Merkle root $SR, recomputed independently"
fi
# refused SOURCE [ENV...]: the auditor exits non-zero with the mismatch
refused() {
	src=$1
	shift
	rc=0
	env "$@" ENGY_TEE_TOKEN=tee-secret timeout $((120 * TIME_SCALE)) "$ENGYD" --no-dlclose \
		-c "$T/auditor.conf" 2> "$T/pin.log" || rc=$?
	[ $rc != 0 ] && [ $rc != 124 ] || fail "pinned to $OTHER: exit $rc: $(tail -3 "$T/pin.log")"
	grep -q "event=spec_root_mismatch model=tiny path=$T/m spec_root=$SR pinned=$OTHER source=$src " "$T/pin.log" ||
		fail "no mismatch ($src): $(tail -3 "$T/pin.log")"
	grep -q "refusing to start" "$T/pin.log" || fail "no reason: $(tail -3 "$T/pin.log")"
	grep -q "event=verdict\|event=auditor_start" "$T/pin.log" && fail "it audited ($src)"
	ok "a checkpoint whose root is not the pinned one ($src): exit $rc, refused with the reason"
}
refused config ENGY_AUDITOR_SPEC_ROOT="$OTHER"
adm models root-add tiny --root "$ROOT" --spec-root "$OTHER" > /dev/null || fail "root-add"
refused store
adm models root-add tiny --root "$ROOT" --spec-root "$SR" > "$T/root.out" || fail "root-add"
grep -q "spec_root=$SR " "$T/root.out" || fail "root-add: $(cat "$T/root.out")"
ENGY_TEE_TOKEN=tee-secret ENGY_AUDITOR_SPEC_ROOT="$SR" "$ENGYD" --no-dlclose -c "$T/auditor.conf" 2> "$T/aud.log" &
APID=$!
PIDS="$PIDS $APID"
wait_for "$T/aud.log" "event=auditor_start " 120 || fail "no start: $(tail -5 "$T/aud.log")"
grep -q "event=spec_root_ok model=tiny spec_root=$SR bytes=[0-9]* ms=[0-9]* source=config+store" "$T/aud.log" ||
	fail "no spec_root_ok: $(grep spec_root "$T/aud.log")"
grep -q "event=spec_root_check model=tiny .*takes a while" "$T/aud.log" || fail "no spec_root_check"
ok "the right pin (option and store): the root is checked and the auditor starts"
for r in req-honest req-cheat req-malformed req-otherroot req-constrained; do
	wait_for "$T/aud.log" "event=verdict request_id=$r " 120 ||
		fail "no verdict for $r: $(tail -5 "$T/aud.log")"
done
vline() { grep "event=verdict request_id=$1 " "$T/aud.log"; }
vline req-honest | grep -q "verdict=pass reason=ok .*exp_p99=0 exp_max=0" ||
	fail "honest: $(vline req-honest)"
ok "honest commitment: pass, 0 exponent mismatches in every chunk"
vline req-cheat | grep -q "verdict=cheat" || fail "cheat: $(vline req-cheat)"
ok "INT4 commitment claiming the canonical root: cheat ($(vline req-cheat | grep -o 'exp_p99=[0-9]* exp_max=[0-9]*'))"
vline req-malformed | grep -q "verdict=unproven reason=bad_commitment" ||
	fail "malformed: $(vline req-malformed)"
vline req-otherroot | grep -q "verdict=unproven reason=root_unknown" ||
	fail "root: $(vline req-otherroot)"
ok "malformed commitment and unknown root: unproven"
vline req-constrained | grep -q "verdict=pass reason=ok .*exp_p99=0 exp_max=0" ||
	fail "constrained: $(vline req-constrained)"
ok "constrained commitment: pass, 0 exponent mismatches (only sampling was masked)"
grep -q 'tee-secret' "$T/aud.log" && fail "the tee token reached the log"
wait_for "$T/acks" '"seq":5' 10 || fail "acks: $(cat "$T/acks" 2>&1)"
grep -q '"seq":1,"verdict":"pass"' "$T/acks" && grep -q '"seq":2,"verdict":"cheat"' "$T/acks" ||
	fail "acks: $(cat "$T/acks")"
ok "every verdict acknowledged to the tee (seq and verdict)"

out=$("$ENGYCTL" verdicts --state-dir "$ST" --limit 10) || fail "engyctl verdicts"
[ "$(echo "$out" | grep -c ' tiny ')" = 5 ] || fail "engyctl verdicts: $out"
echo "$out" | grep req-cheat | grep -q ' cheat ' || fail "verdicts cheat row: $out"
out=$("$ENGYCTL" verdicts --state-dir "$ST" --miner "$H1") || fail "verdicts --miner"
[ "$(echo "$out" | grep -c ' tiny ')" = 3 ] || fail "--miner: $out"
ok "engyctl verdicts: 5 rows, --miner filters"

# The epoch in flight now holds the last verdict: wait for it to close.
EV=$(( $(date +%s) / 10 ))
wait_for "$T/aud.log" "event=epoch_closed epoch=$EV " 40 ||
	fail "epoch $EV did not close: $(tail -5 "$T/aud.log")"
APORT=$(sed -n 's/.*event=listen addr=127.0.0.1 port=\([0-9]*\).*/\1/p' "$T/aud.log" | head -1)
API="http://127.0.0.1:$APORT/api/subnet/v1"
curl -sf "$API/epoch/latest" > "$T/payload.json" || fail "GET epoch/latest"
E=$(sed -n 's/^{"v":1,"netuid":53,"epoch_index":\([0-9]*\).*/\1/p' "$T/payload.json")
[ "$E" = "$EV" ] || fail "latest is $E, not $EV"
grep -q '\\"burn\\":true' "$T/payload.json" || fail "no burn: $(cat "$T/payload.json")"
grep -q "\"weights\":\\[\\[\"$MASTER\",65535\\]\\]" "$T/payload.json" ||
	fail "burn not to the owner: $(cat "$T/payload.json")"
ok "epoch $E closed with no billed traffic: burn, 65535 to the owner"
"$ENGYCTL" epoch verify --ss58 "$MASTER" --netuid 53 --payload "$T/payload.json" > /dev/null ||
	fail "payload does not verify"
curl -sf "$API/epoch/$E" | cmp -s - "$T/payload.json" || fail "epoch/$E differs from latest"
ok "the provider payload verifies against the master hotkey; /epoch/$E is the same"
curl -sf "$API/epoch/$E/aggregates" > "$T/agg.json" || fail "aggregates"
"$ENGYCTL" epoch score --aggregates "$T/agg.json" --payload "$T/payload.json" > /dev/null ||
	fail "engyctl epoch score disagrees"
# The five verdicts were rendered in the epochs from the first one's (by
# its log line's time; a slow machine may have taken more than one) to E.
t1=$(grep 'event=verdict ' "$T/aud.log" | head -1 | cut -d' ' -f1)
E0=$(( $(date -d "$t1" +%s) / 10 - 1 ))
[ "$E0" -lt "$E" ] || fail "first verdict at $t1, after epoch $E"
: > "$T/agg0.json"
for e in $(seq "$E0" $((E - 1))); do
	curl -sf "$API/epoch/$e/aggregates" >> "$T/agg0.json" || :
done
n=$(cat "$T/agg.json" "$T/agg0.json" | grep -o '"cheat":1' | wc -l)
[ "$n" = 1 ] || fail "the cheat verdict is not in the aggregates (epochs $E0..$E): $(cat "$T/agg.json")"
ok "engyctl epoch score on the published aggregates reproduces result_json; the verdicts are counted"
curl -sf "$API/epoch/current" | grep -q '"state":"open"' || fail "epoch/current"
code=$(curl -s -o /dev/null -w '%{http_code}' "$API/epoch/999")
[ "$code" = 404 ] || fail "unknown epoch: $code"
ok "epoch/current answers; an unknown epoch is 404"

kill -TERM $APID
i=0; while kill -0 $APID 2>/dev/null; do i=$((i + 1)); [ $i -lt 200 ] || fail "no exit"; sleep 0.05; done
wait $APID || fail "engyd exit status"
ok "SIGTERM: the auditor exits 0"
grep -q 'ERROR: \(Leak\|Address\)Sanitizer' "$T/aud.log" && fail "sanitizer: $(cat "$T/aud.log")"
exit 0
