#!/bin/sh
# The gateway role's files call one another one way only, in the layers
# plugins/role-gateway/layers declares (specs/gateway.md, "Inside the
# gateway"), as the built objects' symbol tables show.
# Oracle: the built objects' symbol tables (nm) against the layers file; no
# engy output is an expected value.
. "$top_srcdir/tests/integration/lib.sh"
CG="$top_srcdir/scripts/callgraph.sh"
LAYERS="$top_srcdir/plugins/role-gateway/layers"
OBJS="$top_builddir/plugins/role-gateway"

sh "$CG" -l "$LAYERS" "$OBJS" > "$T/edges" 2> "$T/err" ||
  fail "the layers do not hold: $(cat "$T/err")"
# The graph is read from the objects, not an empty one that passes.
for e in "gateway_http -> gateway_req:" "gateway_req -> gateway_store:" \
  "gateway_req -> gateway_route:" "gateway_req -> gateway_relay:" \
  "gateway_relay -> gateway_pool:" "gateway_pool -> gateway_frames:" \
  "gateway_onboard -> gateway_req: gw_submit"; do
  grep -q -- "^$e" "$T/edges" || fail "no edge '$e' in: $(cat "$T/edges")"
done
n=$(sed 's/:.*//' "$T/edges" | tr ' ' '\n' | grep -c '^gateway' || true)
[ "$n" -ge 60 ] || fail "only $n edge ends in: $(cat "$T/edges")"
ok "the role's files call down the declared layers only ($(wc -l < "$T/edges") edges)"

# The check fails when the order is turned upside down, naming the call.
grep -v '^#' "$LAYERS" | grep . | sed -n '1!G;h;$p' > "$T/upside"
if sh "$CG" -q -l "$T/upside" "$OBJS" 2> "$T/err"; then
  fail "an upside-down order passed"
fi
grep -q "upward: gateway_req -> gateway_store:" "$T/err" ||
  fail "no upward call named: $(cat "$T/err")"
ok "an order turned upside down fails, naming the calls that go up"

# A file missing from the order fails; so do two files calling each
# other, even in one layer.
grep -v 'gateway_bus' "$LAYERS" > "$T/missing"
if sh "$CG" -q -l "$T/missing" "$OBJS" 2> "$T/err"; then
  fail "a file outside the layers passed"
fi
grep -q "gateway_bus is in no layer" "$T/err" || fail "$(cat "$T/err")"
ok "a file in no layer fails, naming it"

mkdir "$T/pair"
echo 'void pong(void); void ping(void) { pong(); }' > "$T/pair/ping.c"
echo 'void ping(void); void pong(void) { ping(); }' > "$T/pair/pong.c"
(cd "$T/pair" && ${CC:-cc} -c ping.c pong.c) || fail "cannot compile the pair"
printf 'one: ping pong\n' > "$T/pair/layers"
if sh "$CG" -q -l "$T/pair/layers" "$T/pair" 2> "$T/err"; then
  fail "two files calling each other passed"
fi
grep -q "two-way: ping <-> pong" "$T/err" || fail "$(cat "$T/err")"
ok "two files calling each other fail, even in one layer"
