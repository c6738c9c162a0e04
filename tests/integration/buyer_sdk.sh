#!/bin/sh
# The buyer API against the official SDKs: tests/buyer/api_server (the
# library behind a small evhttp server replaying scripted miner frames)
# driven by npm openai 6.x and @anthropic-ai/sdk
# (tests/integration/buyer_sdk.mjs): both APIs, plain and streamed,
# reasoning, tool calls, the miner body, /v1/models, auth, and each error
# status as the SDK's own error type.  Then, from the server's log: how
# often each failure was attempted (the retry headers at work) and that no
# content reached it.
# Oracle: independent: the official openai and @anthropic-ai/sdk SDKs parse
# every answer; expectations are computed from the scripted miner frames.
. "$top_srcdir/tests/integration/lib.sh"

PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
if [ ! -d "$PEERS" ]; then
  skip_or_fail "no peer modules at $PEERS (run npm ci --prefix tests/peers)"
fi
for m in openai @anthropic-ai/sdk; do
  [ -d "$PEERS/$m" ] || fail "no $m module in $PEERS (run npm ci --prefix tests/peers)"
done
command -v node >/dev/null || fail "node is required for the SDK test"

SERVER="$top_builddir/tests/buyer/api_server"
SCEN="$top_srcdir/tests/buyer/scenarios.json"
"$SERVER" "$SCEN" 65536 >"$T/server.out" 2>"$T/server.err" &
SERVER_PID=$!
PIDS="$PIDS $SERVER_PID"
wait_for "$T/server.out" "listening port=" 10 || fail "api_server did not start: $(cat "$T/server.err")"
port=$(sed -n 's/^listening port=//p' "$T/server.out")

node "$top_srcdir/tests/integration/buyer_sdk.mjs" "$PEERS" "$port" "$SCEN" >"$T/sdk.out" 2>&1 \
  || fail "SDK checks: $(cat "$T/sdk.out")"
n=$(grep -c "^ok - " "$T/sdk.out")
grep -q "^done checks=$n\$" "$T/sdk.out" || fail "SDK run incomplete: $(cat "$T/sdk.out")"
[ "$n" -ge 30 ] || fail "only $n SDK checks ran: $(cat "$T/sdk.out")"
sed 's/^/  /' "$T/sdk.out"
ok "openai and @anthropic-ai/sdk: $n checks"

# attempts SCENARIO STATUS: requests the server answered so.
attempts() {
  grep -c "scenario=$1 status=$2\$" "$T/server.out" || true
}
# The SDKs retry 429 and 5xx twice (retry-after-ms: 1), never 401 or 402,
# and not a 429 that says x-should-retry: false.
[ "$(attempts status:429 429)" -eq 6 ] || fail "429: $(attempts status:429 429) attempts, want 3 per SDK"
[ "$(attempts status:503 503)" -eq 6 ] || fail "503: $(attempts status:503 503) attempts, want 3 per SDK"
ok "429 and 503 are retried (3 attempts per SDK)"
[ "$(attempts quota 429)" -eq 1 ] || fail "quota 429 retried: $(attempts quota 429)"
[ "$(attempts broke 402)" -eq 2 ] || fail "402 retried: $(attempts broke 402)"
ok "402 and a 429 with x-should-retry: false are not retried"
grep -q "path=/v1/messages scenario=midstream status=200" "$T/server.out" || fail "no Anthropic stream"
if grep -q -e "Hello" -e "Paris" -e "closed early" "$T/server.out" "$T/server.err"; then
  fail "content or an early close in the server log"
fi
ok "the server log holds no content, no stream was cut"
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" || fail "api_server exit $?: $(cat "$T/server.err")"
[ ! -s "$T/server.err" ] || fail "api_server stderr: $(cat "$T/server.err")"
ok "the server ends cleanly on SIGTERM (nothing on stderr, no leak report)"

echo "$N_OK passed, 0 failed"
