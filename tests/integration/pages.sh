#!/bin/sh
# SPDX-License-Identifier: MIT
# The pages people look at (the provider's /epochs, /epochs/{i}, /miners
# and the gateway's /internal/v1/status) on the devnet: scripts/devnet.sh
# --once with this build runs this test's checks (ENGY_DEVNET_THEN) while
# the honest miners and the INT4-cheat miner, the gateway and the auditor are up
# and an epoch is signed.  Under curl alone: complete HTML, the right rows
# and numbers (the JSON API's), a miner label carrying <script> and quotes
# escaped, 404s, the status page behind the internal token, no buyer
# content.  Then in headless Chromium (pages_browser.mjs): no console
# error, the tables as the JSON API, the SVG charts with a box, the label
# shown as text; a screenshot of each page in tests/integration/pages.out/.
# Oracle: numbers on the pages against the JSON API (engy against engy),
# HTML checked by curl and headless Chromium for escaping and completeness.
. "$(dirname "$0")/lib.sh"

command -v node >/dev/null || skip_or_fail "no node"
[ -x "$top_srcdir/scripts/devnet.sh" ] || skip_or_fail "no scripts/devnet.sh"
PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
B=$(cd "$top_builddir" && pwd)
OUT="$B/tests/integration/pages.out"
rm -rf "$OUT"
mkdir -p "$OUT"
BROWSER=1
[ -d "$PEERS/playwright-core" ] || { BROWSER=0; skip_part "no playwright-core in the npm peers"; }
[ -x "${ENGY_CHROMIUM:-/usr/bin/chromium}" ] || { BROWSER=0; skip_part "no chromium (apt install chromium)"; }

HOSTILE='<script>alert("x")</script> it'"'"'s & co'
cat > "$T/then.sh" <<'SH'
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
trap 'cp "$T"/*.html "$OUT/" 2>/dev/null || :' EXIT
P=$DEVNET_PROVIDER G=$DEVNET_GATEWAY E=$DEVNET_EPOCH
ENGY_PLUGIN_DIR="$DEVNET_STATE/plugins" "$ENGYCTL" admin --state-dir "$DEVNET_STATE/gateway" \
	miners set "$DEVNET_HONEST2" --label "$HOSTILE" > /dev/null || fail "miners set --label"
get() {  # url file [curl args]: 200, text/html, a whole document
	u=$1 f=$2; shift 2
	curl -s -D "$f.h" -o "$f" "$@" "$u" || fail "curl $u"
	head -1 "$f.h" | grep -q ' 200' || fail "$u: $(head -1 "$f.h")"
	grep -qi '^content-type: text/html; charset=utf-8' "$f.h" || fail "$u: $(grep -i content-type "$f.h")"
	head -c 15 "$f" | grep -q '^<!DOCTYPE html>' || fail "$u: no doctype"
	tail -c 8 "$f" | grep -q '</html>' || fail "$u: not whole"
	! grep -qi '<script' "$f" || fail "$u: a script element"
	! grep -q 'say something' "$f" || fail "$u: buyer content"
}
curl -sf "$P/api/subnet/v1/epoch/$E" > "$T/payload.json" || fail payload
curl -sf "$P/api/subnet/v1/epoch/$E/aggregates" > "$T/agg.json" || fail aggregates
DIG=$(sed -n 's/.*"digest":"\([0-9a-f]*\)".*/\1/p' "$T/payload.json")
get "$P/epochs/$E" "$T/epoch.html"
grep -q "<code class=\"digest\">$DIG</code>" "$T/epoch.html" || fail "digest $DIG not on /epochs/$E"
grep -q '<td class="sig ok">valid</td>' "$T/epoch.html" || fail "signature check"
# the weights table: each [hotkey, w] of the signed vector, in order
W=$(grep -o '\\"weights\\":\[\(\[[^]]*\],\{0,1\}\)*\]' "$T/payload.json" | grep -o '\\"5[^\\]*\\",[0-9]*' | tr -d '\\"')
PW=$(sed -n 's/.*<table class="weights">\(.*\)<\/table>.*/\1/p' "$T/epoch.html" | grep -o '<tr><td><code>[^<]*</code></td><td>[^<]*</td><td class="n w">[0-9]*' |
	sed 's/<tr><td><code>\([^<]*\)<.*"n w">\([0-9]*\)/\1,\2/')
[ -n "$W" ] && [ "$W" = "$PW" ] || fail "weights: page '$PW', payload '$W'"
# two honest miners share the weight (scripts/devnet.sh): each gets some
for hk in "$DEVNET_HONEST" "$DEVNET_HONEST2"; do
	echo "$W" | grep -q "^$hk,[1-9][0-9]*\$" || fail "honest weight of $hk: $W"
done
grep -q '<svg class="weights"' "$T/epoch.html" || fail "no chart"
grep -q 'engyctl epoch score --aggregates agg.json --payload payload.json' "$T/epoch.html" || fail "no command"
echo "curl: /epochs/$E is whole HTML: digest, signature valid, weights as the signed payload ($(echo $W | wc -w) entries), chart, command"
get "$P/epochs" "$T/epochs.html"
grep -q "<section class=\"epoch\" id=\"e$E\">" "$T/epochs.html" || fail "/epochs lacks $E"
grep -q '<td class="status">open</td>' "$T/epochs.html" || fail "/epochs: no open epoch"
get "$P/miners?epoch=$E" "$T/miners.html"
get "$P/miners" "$T/miners-latest.html"
ESC='&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; it&#39;s &amp; co'
grep -qF "<td class=\"label\">$ESC</td>" "$T/miners.html" || fail "hostile label: $(grep -o 'class="label">[^/]*' "$T/miners.html")"
grep "<code>$DEVNET_HONEST</code>" "$T/miners.html" | grep 'class="n weight">[1-9][0-9]*<' | grep -q 'class="gate ok">ok<' ||
	fail "honest row: $(grep "$DEVNET_HONEST" "$T/miners.html")"
# Onboarding keeps the cheat out of buyer traffic: it has an aggregates
# row (gated cheat, weight 0) only when its probes' verdicts fell in this
# epoch; either way it has no weight in the signed vector.
CHEATS=
if grep -q "\"hotkey\":\"$DEVNET_CHEAT\"" "$T/agg.json"; then
	grep "<code>$DEVNET_CHEAT</code>" "$T/miners.html" | grep 'class="n weight">0<' | grep -q 'class="gate bad">cheat<' ||
		fail "cheat row: $(grep "$DEVNET_CHEAT" "$T/miners.html")"
	CHEATS=$DEVNET_CHEAT
else
	! grep -q "<code>$DEVNET_CHEAT</code>" "$T/miners.html" || fail "a cheat row with no aggregates row"
fi
echo "$W" | grep -q "^$DEVNET_CHEAT,[1-9]" && fail "the cheat has weight: $W"
for hk in "$DEVNET_HONEST" "$DEVNET_HONEST2" $CHEATS; do
	c=$(grep -o "\"hotkey\":\"$hk\",\"uid\":[0-9]*,\"model\":\"[^\"]*\",\"counted\":[0-9]*,\"tokens\":[0-9]*" "$T/agg.json" | sed 's/.*"counted":\([0-9]*\),"tokens":\([0-9]*\)/\1 \2/')
	set -- $c
	[ -n "${1:-}" ] || fail "no aggregates row for $hk"
	grep "<code>$hk</code>" "$T/miners.html" | grep "class=\"n counted\">$1<" | grep -q "class=\"n tokens\">$2<" ||
		fail "$hk counted/tokens not $1/$2"
	grep "<code>$hk</code>" "$T/miners.html" | grep -q 'toploc [0-9]*/[0-9]*/[0-9]*<br>' || fail "$hk: no toploc verdicts"
done
code=$(curl -s -o /dev/null -w '%{http_code}' "$P/miners?epoch=999")
[ "$code" = 404 ] || fail "/miners?epoch=999: $code"
echo "curl: /miners?epoch=$E: honest ok with a weight, cheat ${CHEATS:+gated by cheat }0, counted and tokens as the aggregates, verdicts by scheme, the label escaped"
code=$(curl -s -o /dev/null -w '%{http_code}' "$P/epochs/999")
[ "$code" = 404 ] || fail "/epochs/999: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "$P/epochs/x")
[ "$code" = 404 ] || fail "/epochs/x: $code"
# The workers' JSON and the status page are two requests: a worker being
# probed meanwhile (a cheat's next round on a slow machine) may move
# between them, so the pair is fetched again until one snapshot agrees
# (10 tries; a real mismatch fails every time).
status_agrees() {
	get "$G/internal/v1/status" "$T/status.html" -H "Authorization: Bearer $DEVNET_TEE_TOKEN"
	grep -q '<meta http-equiv="refresh" content="5">' "$T/status.html" || fail "no refresh"
	curl -sf "$G/internal/v1/workers" -H "Authorization: Bearer $DEVNET_TEE_TOKEN" > "$T/workers.json" ||
		fail "GET /internal/v1/workers"
	for hk in "$DEVNET_HONEST" "$DEVNET_CHEAT"; do
		j=$(grep -o "\"name\":\"[^\"]*\",\"miner\":\"$hk\",\"model\":\"[^\"]*\",\"model_root\":\"[0-9a-f]*\",\(\"spec_root\":\"[0-9a-f]*\",\)\{0,1\}\"state\":\"[a-z]*\"" "$T/workers.json") ||
			fail "no worker $hk in $(cat "$T/workers.json")"
		name=$(echo "$j" | sed 's/^"name":"\([^"]*\)".*/\1/')
		st=$(echo "$j" | sed 's/.*"state":"\([a-z]*\)"/\1/')
		served=$(grep -o "\"miner\":\"$hk\"[^{]*\"served\":[0-9]*" "$T/workers.json" | sed 's/.*://')
		grep -q "<td class=\"name\">$name</td><td><code>$hk</code></td><td>devnet-qwen3</td><td class=\"state [a-z]*\">$st</td>.*<td class=\"n\">$served / [0-9]*</td>" "$T/status.html" ||
			{ WHY="status: $hk ($name, $st, served $served): $(grep "$hk" "$T/status.html")"; return 1; }
	done
}
code=$(curl -s -o /dev/null -w '%{http_code}' "$G/internal/v1/status")
[ "$code" = 401 ] || fail "status without the token: $code"
n=0
until status_agrees; do
	n=$((n + 1)); [ $n -lt 10 ] || fail "$WHY"
	sleep 0.5
done
BILLED=$(ENGY_PLUGIN_DIR="$DEVNET_STATE/plugins" "$ENGYCTL" admin --state-dir "$DEVNET_STATE/gateway" log tail -n 100000 |
	grep ' account=[1-9][0-9]* .* status=200 ' | grep -vc 'probe' || true)
grep -q "<tr><td>devnet-qwen3</td><td class=\"n\">$BILLED</td>" "$T/status.html" ||
	fail "spend: $BILLED billed; $(grep -o '<table class="spend">.*' "$T/status.html" | head -c 300)"
echo "curl: gateway status behind the token (401 without): both workers in their /internal/v1/workers state and served count, spend of $BILLED billed requests, refresh"
if [ "$BROWSER" = 1 ]; then
	node "$top_srcdir/tests/integration/pages_browser.mjs" "$P" "$G" "$DEVNET_TEE_TOKEN" "$E" \
		"$DEVNET_HONEST" "$DEVNET_HONEST2" "$OUT" "$HOSTILE" || fail "browser"
fi
SH
export ENGYCTL T OUT HOSTILE BROWSER top_srcdir ENGY_PEERS="$PEERS"
rc=0
ENGY_DEVNET_BUILD="$B" ENGY_DEVNET_STATE="$T/devnet" ENGY_DEVNET_EPOCH_S=12 \
	ENGY_DEVNET_REQUESTS=8 ENGY_DEVNET_THEN="sh '$T/then.sh'" \
	timeout $((170 * TIME_SCALE)) "$top_srcdir/scripts/devnet.sh" --once > "$T/out" 2> "$T/err" || rc=$?
[ $rc = 3 ] && skip_or_fail "a devnet role is missing here: $(cat "$T/err")"
grep -E '^(curl|browser): ' "$T/err" > "$T/lines" || :
while read -r l; do ok "$l"; done < "$T/lines"
[ $rc = 0 ] || fail "devnet.sh exit $rc: $(grep -v '^devnet: ' "$T/err" | tail -15; tail -3 "$T/err")"
grep -q '^pages: http://127.0.0.1:[0-9]*/epochs  http://127.0.0.1:[0-9]*/miners' "$T/out" ||
	fail "devnet.sh prints no page URLs: $(cat "$T/out")"
ok "devnet.sh prints the page URLs beside its table"
# under ASan/UBSan (scripts/test.sh's second pass) the roles that render
# the pages report at exit into their logs
if grep -l 'ERROR: \(Leak\|Address\)Sanitizer\|runtime error:' "$T/devnet/logs/gateway.log" \
	"$T/devnet/logs/auditor.log" 2>/dev/null; then
	fail "sanitizer: $(grep -h -A12 'Sanitizer\|runtime error:' "$T/devnet/logs/gateway.log" "$T/devnet/logs/auditor.log" | head -40)"
fi
if [ "$BROWSER" = 1 ]; then
	[ -f "$OUT/browser.ok" ] || fail "the browser checks did not finish"
	for p in epoch epochs miners gateway-status; do
		[ -s "$OUT/$p.png" ] || fail "no screenshot $p.png"
	done
	ok "screenshots in $OUT: epoch, epochs, miners, gateway-status"
fi
exit 0
