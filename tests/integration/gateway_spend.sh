#!/bin/sh
# SPDX-License-Identifier: MIT
# Money under concurrency: reservations are taken before routing, so N
# parallel requests on a balance that covers fewer than N never drive it
# negative (the rest get 402, the SDK's error for no credit); every
# settle charges the tokens produced at the price card and refunds the
# rest of its hold; a stream the buyer hangs up on pays for what reached
# it (counted with the model's tokenizer when configured, else one token
# per cancel_bytes_per_token bytes) and the miner gets `cancel`; the
# books balance to the micro-dollar.  Scripted miner peers make every
# token count known.
# Oracle: money computed by the script from the price card and the token
# counts the scripted miners send (bad_miner.mjs); the SDK classifies 402s.
. "$top_srcdir/tests/integration/gateway_lib.sh"

tiny_model
# Output at $100 per 1M tokens (100 micro-USD a token), input free: a
# request with max_tokens 8 reserves 800 micro-USD.
A models put spend --max-input-tokens 4096 --max-output-tokens 16 --max-request-s 30 \
	--price-input 0 --price-output 100 >/dev/null || fail "models put spend"
A models put spendtok --max-input-tokens 4096 --max-output-tokens 16 --max-request-s 30 \
	--price-input 0 --price-output 100 >/dev/null || fail "models put spendtok"
A accounts create race >/dev/null && A topup race 0.003 >/dev/null || fail "race account"
A accounts create part >/dev/null && A topup part 1 >/dev/null || fail "part account"
RACE=$(A keys create race 2>/dev/null) || fail "key"
PART=$(A keys create part 2>/dev/null) || fail "key"
MK=$(register 5HGjWAeFDfFCWPsjFQdVV2Msvz2XtMktvgocEZcCj68kUMaw)
gw_conf "  first_token_timeout_s = 10
  key_max_inflight = 64
  tokenizers = { \"spendtok=$T/model\" }"
gw_start
grep -q "event=tokenizer_loaded model=spendtok" "$T/gw.log" || fail "tokenizer not loaded"
MARKER="spend$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
peer slow slow MINER_KEY="$MK" MODEL=spend WORKER_NAME=slow MAX_INFLIGHT=64 CHUNKS=8 \
	CHUNK_MS=150 MARKER="$MARKER"
peer tok slow MINER_KEY="$MK" MODEL=spendtok WORKER_NAME=tok MAX_INFLIGHT=64 CHUNKS=8 \
	CHUNK_MS=300 MARKER="$MARKER"
buyer() {  # KEY MODEL STREAM N ABORT MAX_TOKENS
	node "$top_srcdir/tests/integration/gateway_buyer.mjs" "$PEERS" "$BASE" "$@" \
		> "$T/buy.out" 2>&1 || fail "buyer: $(cat "$T/buy.out")"
}

# --- the race -------------------------------------------------------------------
k=$(printf '%s' "$RACE")
node "$top_srcdir/tests/integration/gateway_buyer.mjs" "$PEERS" "$BASE" "$k" openai spend 0 12 0 8 \
	> "$T/race.out" 2>&1 || fail "race: $(cat "$T/race.out")"
n200=$(grep -c "status=200 " "$T/race.out" || true)
n402=$(grep -c "status=402 class=APIError" "$T/race.out" || true)
[ "$n200" = 3 ] && [ "$n402" = 9 ] || fail "race: $n200 answered, $n402 refused: $(cat "$T/race.out")"
wait_settled
money race
[ "$SPENT" = 2400 ] && [ "$BALANCE" = 600 ] || fail "race: spent $SPENT, balance $BALANCE"
ok "12 parallel requests on credit for 3 holds: 3 answered, 9 got 402; spent 2400, balance 600, nothing reserved"
node "$top_srcdir/tests/integration/gateway_buyer.mjs" "$PEERS" "$BASE" "$k" anthropic spend 1 4 0 8 \
	> "$T/race2.out" 2>&1 || fail "race2: $(cat "$T/race2.out")"
[ "$(grep -c 'status=402' "$T/race2.out")" = 4 ] || fail "under a hold's worth: $(cat "$T/race2.out")"
money race
[ "$BALANCE" = 600 ] || fail "balance moved: $BALANCE"
ok "600 micro-USD left is under one hold: Anthropic streams get 402 (billing_error) before any miner"

# --- settle charges what was produced ------------------------------------------------
buyer "$PART" openai spend 0 1 0 16
grep -q "status=200 .*completion=8 " "$T/buy.out" || fail "16-token request: $(cat "$T/buy.out")"
wait_settled
money part
[ "$SPENT" = 800 ] || fail "8 of 16 tokens: spent $SPENT, want 800 (the hold was 1600)"
ok "a request reserving 16 tokens that produced 8 pays 800 micro-USD; the rest of the hold is back"

# --- the buyer hangs up mid-stream ---------------------------------------------------
# Without a tokenizer: ceil(bytes received / 4) tokens.
buyer "$PART" openai spend 1 1 2 16
grep -q "status=aborted .*chunks=2 " "$T/buy.out" || fail "abort: $(cat "$T/buy.out")"
peer_wait slow "cancel corr="
wait_settled
A log tail -n 1 --account part > "$T/last"
bytes=$(printf '%s w1' "$MARKER" | wc -c)
toks=$(( (bytes + 3) / 4 ))
grep -q "status=499 prompt=[0-9]* cached=0 completion=$toks .* cost=0.000$(printf '%03d' $((toks * 100)))\$" "$T/last" ||
	fail "cancelled stream ($bytes bytes, $toks tokens): $(cat "$T/last")"
money part
ok "a stream left after 2 chunks ($bytes bytes): 499, the miner got cancel, $toks tokens charged"

# With the model's tokenizer: the received text, tokenized.
before=$SPENT
buyer "$PART" anthropic spendtok 1 1 3 16
grep -q "status=aborted .*chunks=3 " "$T/buy.out" || fail "abort tok: $(cat "$T/buy.out")"
peer_wait tok "cancel corr="
wait_settled
A log tail -n 1 --account part > "$T/last"
toks=$(printf '%s w1 w2' "$MARKER" | "$ENGYCTL" tokenize --tokenizer "$T/model" | wc -w)
grep -q "model=spendtok .*status=499 .* completion=$toks " "$T/last" ||
	fail "tokenized cancel ($toks tokens): $(cat "$T/last")"
money part
[ "$((SPENT - before))" = "$((toks * 100))" ] || fail "tokenized cancel charged $((SPENT - before))"
ok "with the model's tokenizer the 3 chunks received count $toks tokens exactly"

gw_stop
echo "$N_OK passed, 0 failed"
