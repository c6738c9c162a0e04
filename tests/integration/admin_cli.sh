#!/bin/sh
# SPDX-License-Identifier: MIT
# engyctl admin end to end on a real store-sqlite database: accounts,
# top-ups, keys (printed once, stored hashed under the pepper), models from
# a published model spec, roots, miners; then gateway-shaped traffic
# (store_traffic: reserve, settle with a metadata row) and what the
# operator sees of it: balances, the request log, a 402, a revoked key,
# a crashed gateway's hold released; and zero data retention: the buyer's
# content and the key texts are nowhere in the database files.
# Oracle: money worked by hand in the script from the amounts it tops up
# and the costs it settles (specs/store.md §2); the database files are
# searched with grep, not with engy.
. "$top_srcdir/tests/integration/lib.sh"

PLUG="$top_builddir/plugins/store-sqlite/.libs"
TRAFFIC="$top_builddir/tests/integration/store_traffic"
SPEC="$top_srcdir/tests/data/store/tiny.model_spec.json"
[ -f "$PLUG/store-sqlite.so" ] || fail "store-sqlite.so not built"
export ENGY_PLUGIN_DIR="$PLUG" ENGY_STATE_DIR="$T"
export ENGY_KEY_PEPPER="admin-cli-pepper-0123456789abcdef"
ALICE=5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY
MARKER="ZDR-MARKER-admin-cli-4b1d"
A() { "$ENGYCTL" admin "$@"; }
usd() { printf '%d.%06d' $(($1 / 1000000)) $(($1 % 1000000)); }
absent() {  # absent WHAT NEEDLE: in no database file
  for f in "$T"/engy.db*; do
    ! grep -qa -- "$2" "$f" || fail "$1 found in $(basename "$f")"
  done
  ok "$1 is not in the database files"
}

# --- accounts and money ---------------------------------------------------
expect_ok "account created" "account id=1 name=acme balance=0.000000" A accounts create acme
expect_fail "duplicate account refused" "accounts create 'acme': already exists" A accounts create acme
expect_fail "bad account name refused" "refused as invalid" A accounts create "bad
name"
[ "$(stat -c %a "$T/engy.db")" = 600 ] || fail "engy.db is not mode 600"
ok "database file is private (0600)"
expect_ok "top-up in dollars" "balance=12.500000 reserved=0.000000 available=12.500000 credited=12.500000" A topup acme 12.50
expect_fail "top-up needs a positive amount" "USD is a positive amount" A topup acme -3
expect_fail "top-up of seven decimals refused" "USD is a positive amount" A topup acme 0.0000001
expect_fail "top-up of zero refused" "USD is a positive amount" A topup acme 0
expect_fail "top-up above the cap refused" "USD is a positive amount" A topup acme 1000000001
expect_fail "top-up of an unknown account" "topup 'nobody': not found" A topup nobody 1
expect_ok "account by id" "name=acme" A accounts show 1
expect_fail "usage error exits 2" "give one NAME" A accounts create
A accounts create >/dev/null 2>&1 && fail "usage exit"; [ $? -eq 2 ] || fail "usage exit is not 2"

# --- keys -------------------------------------------------------------------
K1=$(A keys create acme --label ci 2>"$T/err") || fail "keys create: $(cat "$T/err")"
echo "$K1" | grep -Eq '^sk-engy-[0-9A-Za-z]{43}$' || fail "key shape: $K1"
grep -q "shown once, not stored" "$T/err" || fail "no once-only note: $(cat "$T/err")"
ok "key printed once, alone on stdout"
SHOWN=$(printf '%.12s' "$K1")
expect_ok "key listed by its shown part" "shown=$SHOWN status=active label=\"ci\"" A keys list acme
K2=$(A keys create acme 2>/dev/null) || fail "second key"
[ "$K1" != "$K2" ] || fail "two keys alike"
expect_ok "revoke" "key id=1 status=revoked" A keys revoke 1
expect_ok "revoked key listed as such" "shown=$SHOWN status=revoked" A accounts show acme
expect_fail "revoke unknown key" "keys revoke: key '99': not found" A keys revoke 99
expect_fail "revoke needs a number" "give one KEY_ID" A keys revoke abc

# --- models -----------------------------------------------------------------
expect_fail "gzip spec refused with a hint" "zcat it into --spec -" \
  A models put qwen3.6-35b-a3b --spec "$top_srcdir/tests/data/store/tiny.model_spec.json.gz"
expect_fail "new model needs its limits" "a new model needs --max-input-tokens" A models put bare
expect_ok "model from a spec on stdin" "price_input=0.150000 price_cached_input=0.075000 price_output=0.600000" \
  sh -c "cat '$SPEC' | '$ENGYCTL' admin models put qwen3.6-35b-a3b --spec - --quant fp8 --price-input 0.15 --price-cached-input 0.075 --price-output 0.60"
expect_ok "spec limits and TOPLOC kept" "max_input_tokens=229376 max_output_tokens=32768 max_request_s=1800 toploc_topk=128 toploc_v=40 toploc_p=0.990000" A models show qwen3.6-35b-a3b
expect_ok "spec root kept with its arch" "root 15ef6d8cf34edcb340a24d0d124303bbe91f0c435cb0041db220bfcc7087c610 model=qwen3.6-35b-a3b quant=fp8 arch=qwen3_5_moe_v0" A models roots
expect_ok "price update keeps the rest" "price_output=0.700000 score_rate=500 max_input_tokens=229376" A models put qwen3.6-35b-a3b --price-output 0.70
expect_fail "bad price refused" "bad value" A models put qwen3.6-35b-a3b --price-output -1
expect_fail "bad toploc-p refused" "bad value" A models put qwen3.6-35b-a3b --toploc-p 1.5
expect_ok "no mantissa limits unless set" "toploc_mant_mean=0.00 toploc_mant_median=0.00" A models show qwen3.6-35b-a3b
expect_ok "mantissa limits by flag" "toploc_p=0.990000 qual_ttft_p99_ms=5000 qual_tpot_p99_ms=100 toploc_mant_mean=2.50 toploc_mant_median=8.00" \
  A models put qwen3.6-35b-a3b --toploc-mant-mean 2.5 --toploc-mant-median 8
expect_fail "a mantissa limit of three decimals refused" "bad value" A models put qwen3.6-35b-a3b --toploc-mant-mean 2.125
expect_fail "a mantissa limit above 655.35 refused" "bad value" A models put qwen3.6-35b-a3b --toploc-mant-median 655.36
# a spec file's fields: mantissa limits kept; a wrong type or range refused, naming the field
Z=15ef6d8cf34edcb340a24d0d124303bbe91f0c435cb0041db220bfcc7087c610
spec() { printf '{"model_root":"%s",%s}' "$Z" "$1" > "$T/s.json"; }
spec '"toploc_mant_mean":1.75,"toploc_mant_median":3'
expect_ok "mantissa limits from a spec file" "toploc_mant_mean=1.75 toploc_mant_median=3.00" A models put qwen3.6-35b-a3b --spec "$T/s.json"
expect_ok "the other limits kept" "toploc_topk=128 toploc_v=40 toploc_p=0.990000" A models show qwen3.6-35b-a3b
for bad in '"toploc_mant_mean":-1|toploc_mant_mean is not a number from 0 to 655.35' \
	'"toploc_mant_median":"2"|toploc_mant_median is not a number' \
	'"toploc_mant_mean":0.001|toploc_mant_mean is not a number from 0 to 655.35 with at most two decimals' \
	'"toploc_mant_median":700|toploc_mant_median is not a number from 0 to 655.35' \
	'"toploc_v":"10"|toploc_v is not an integer' \
	'"toploc_p":1.5|toploc_p is not a number from 0 to 1' \
	'"max_input_tokens":0|max_input_tokens is not an integer from 1' \
	'"toploc_topk":8,"toploc_v":9|toploc_v is larger than toploc_topk' \
	'"price":{"input":-5}|price.input is not an integer' \
	'"price":7|price is not an object'; do
	spec "${bad%%|*}"
	expect_fail "spec ${bad%%|*} refused" "${bad#*|}" A models put qwen3.6-35b-a3b --spec "$T/s.json"
done
expect_ok "a refused spec changed nothing" "toploc_mant_mean=1.75 toploc_mant_median=3.00" A models show qwen3.6-35b-a3b
# the GEMM audit's sizes (specs/gemm-audit.md §6): a new model gets §6's
# defaults, a spec file's gemm_* fields replace those it has, flags win
expect_ok "GEMM sizes: §6's defaults for a new model" "toploc_mant_median=3.00 gemm_layers=4 gemm_tokens=4 gemm_projections=2 gemm_spots=2 gemm_z=6.000 gemm_c_el=6.000 gemm_rate=0.050000" \
  A models show qwen3.6-35b-a3b
spec '"gemm_layers":3,"gemm_c_el":7.5,"gemm_rate":0.25'
expect_ok "GEMM sizes from a spec file, the rest kept" "gemm_layers=3 gemm_tokens=4 gemm_projections=2 gemm_spots=2 gemm_z=6.000 gemm_c_el=7.500 gemm_rate=0.250000" \
  A models put qwen3.6-35b-a3b --spec "$T/s.json"
expect_ok "GEMM sizes by flag (0: the verifier's own; rate 0: never opened)" "gemm_layers=3 gemm_tokens=16 gemm_projections=0 gemm_spots=0 gemm_z=8.500 gemm_c_el=7.500 gemm_rate=0.000000" \
  A models put qwen3.6-35b-a3b --gemm-tokens 16 --gemm-projections 0 --gemm-spots 0 --gemm-z 8.5 --gemm-rate 0
for bad in '--gemm-rate 1.5' '--gemm-z 0.5' '--gemm-c-el 1000.5' '--gemm-z 6.0001' '--gemm-layers 65537' '--gemm-tokens 4097' '--gemm-projections 65' '--gemm-spots x'; do
	# shellcheck disable=SC2086 # the flag and its value
	expect_fail "$bad refused" "bad value" A models put qwen3.6-35b-a3b $bad
done
expect_fail "gemm_layers x gemm_tokens above 4096 refused by the store" "field=gemm_sizes" \
  A models put qwen3.6-35b-a3b --gemm-layers 257
spec '"gemm_rate":2'
expect_fail "spec gemm_rate 2 refused" "gemm_rate is not a number from 0 to 1" A models put qwen3.6-35b-a3b --spec "$T/s.json"
expect_ok "refused GEMM sizes changed nothing" "gemm_layers=3 gemm_tokens=16 gemm_projections=0 gemm_spots=0 gemm_z=8.500 gemm_c_el=7.500 gemm_rate=0.000000" \
  A models show qwen3.6-35b-a3b
# the pinned Merkle root: --spec-root names it, else the spec's model_root
SR=bb$(printf '%062d' 7)
expect_ok "spec root pinned by flag" "root 15ef6d8cf34edcb340a24d0d124303bbe91f0c435cb0041db220bfcc7087c610 model=qwen3.6-35b-a3b quant=fp8 arch=- spec_root=$SR" \
  A models root-add qwen3.6-35b-a3b --root 15ef6d8cf34edcb340a24d0d124303bbe91f0c435cb0041db220bfcc7087c610 --quant fp8 --spec-root "$SR"
expect_fail "bad spec root" "--spec-root takes 64 hex digits" A models root-add qwen3.6-35b-a3b --root "$SR" --spec-root xyz
expect_fail "spec root needs a root" "--spec-root needs --root or --spec" A models put qwen3.6-35b-a3b --spec-root "$SR"
HELLO=aa$(printf '%062d' 0)
expect_ok "a second root" "root $HELLO model=qwen3.6-35b-a3b quant=int4" A models root-add qwen3.6-35b-a3b --root "$HELLO" --quant int4
[ "$(A models roots qwen3.6-35b-a3b | wc -l)" = 2 ] || fail "two roots"
expect_fail "a root belongs to one model" "already exists" sh -c "'$ENGYCTL' admin models put other --max-input-tokens 1 --max-output-tokens 1 --max-request-s 1 --root $HELLO"
expect_ok "root deleted" "deleted" A models root-del "$HELLO"
expect_fail "bad root" "64 hex digits" A models root-del xyz
expect_ok "models list" "model name=other status=enabled" A models list
expect_ok "model disabled" "status=disabled" A models put other --disable

# --- miners -----------------------------------------------------------------
MK=$(A miners register "$ALICE" --label alice-4090 2>"$T/err") || fail "register: $(cat "$T/err")"
echo "$MK" | grep -Eq '^mk-engy-[0-9A-Za-z]{43}$' || fail "miner key shape: $MK"
ok "miner key printed once"
expect_fail "registered twice" "registered already" A miners register "$ALICE"
expect_fail "bad hotkey refused" "refused as invalid" A miners register 5NotAnAddress
expect_ok "miner updated" "label=\"alice-4090\" status=disabled first_party=yes priority=3" \
  A miners set "$ALICE" --priority 3 --first-party --disable
expect_fail "unknown miner" "not found" A miners set 5FHneW46xGXgs5mUiveU4sbTyGBzmstUspZC92UhjJM694ty --enable
MK2=$(A miners set "$ALICE" --rotate-key --enable 2>/dev/null) || fail "rotate"
[ "$MK2" != "$MK" ] || fail "rotated key is the old one"
expect_ok "miners list" "hotkey=$ALICE label=\"alice-4090\" status=active first_party=yes priority=3 key=$(printf '%.12s' "$MK2")" A miners list

# --- traffic, as the gateway makes it ------------------------------------------
[ -z "$(A log tail)" ] || fail "log not empty before traffic"
ok "log empty before traffic"
OUT=$("$TRAFFIC" "$PLUG/store-sqlite.so" "$T/engy.db" "$K2" qwen3.6-35b-a3b 20 "$MARKER") ||
  fail "traffic: $OUT"
case "$OUT" in requests=20\ charged_micro=*) ;; *) fail "traffic: $OUT";; esac
CH=${OUT#*charged_micro=}
[ "$CH" -gt 0 ] || fail "nothing charged"
ok "20 requests reserved and settled ($CH micro-USD)"
expect_ok "balance is the top-up less the charges" \
  "balance=$(usd $((12500000 - CH))) reserved=0.000000 available=$(usd $((12500000 - CH))) credited=12.500000 spent=$(usd "$CH")" A accounts show acme
[ "$(A log tail -n 100 --account acme | wc -l)" = 20 ] || fail "20 log rows"
ok "20 rows in the request log"
expect_ok "tail shows the newest last" "request=req-19 account=1 key=2 model=qwen3.6-35b-a3b miner=$ALICE worker=ins-test status=200" \
  sh -c "'$ENGYCTL' admin log tail -n 3 | tail -1"
[ "$(A log tail -n 3 | head -1 | grep -c 'request=req-17')" = 1 ] || fail "tail order"
ok "tail is oldest first"
SUM=$(A log tail -n 100 | sed -n 's/.* cost=\([0-9]*\)\.\([0-9]*\).*/\1\2/p' |
  awk '{ s += $1 } END { print s }')
[ "$SUM" = "$CH" ] || fail "log costs $SUM != charged $CH"
ok "the log's costs add up to the charges"
expect_fail "revoked key gets 401" "401 revoked key" "$TRAFFIC" "$PLUG/store-sqlite.so" "$T/engy.db" "$K1" qwen3.6-35b-a3b 1 x
OUT=$(ENGY_KEY_PEPPER= "$TRAFFIC" "$PLUG/store-sqlite.so" "$T/engy.db" "$K2" qwen3.6-35b-a3b 1 x) && fail "no pepper accepted"
case "$OUT" in "401 unknown key") ok "without the pepper the key is unknown";; *) fail "pepper: $OUT";; esac

# A poor account: the second request does not fit its balance.
A accounts create poor >/dev/null
A topup poor 0.000050 >/dev/null
KP=$(A keys create poor 2>/dev/null)
expect_ok "402 when the balance runs out" "refused=402 after=" "$TRAFFIC" "$PLUG/store-sqlite.so" "$T/engy.db" "$KP" qwen3.6-35b-a3b 50 "$MARKER"
expect_ok "the poor account never goes negative" "name=poor balance=0.0000" A accounts show poor

# A gateway dies holding a reservation; it is released once expired.
OUT=$("$TRAFFIC" "$PLUG/store-sqlite.so" "$T/engy.db" "$K2" qwen3.6-35b-a3b 1 "$MARKER" 300) || fail "crash run: $OUT"
case "$OUT" in *held=1000) ;; *) fail "crash run: $OUT";; esac
expect_ok "a crashed gateway's hold stays" "reserved=0.001000" A accounts show acme
# The hold expires 300 ms after it was taken: release-expired releases
# nothing until then, then exactly that hold.
i=0
while :; do
	out=$(A reservations release-expired 2>&1) || fail "release-expired: $out"
	case "$out" in
	*"released=1 amount=0.001000"*) break;;
	*"released=0 "*|*"released=0") ;;
	*) fail "release-expired before the hold was released: $out";;
	esac
	i=$((i + 1)); [ $i -le 100 ] || fail "the hold was never released: $out"
	sleep 0.05
done
ok "released once expired"
expect_ok "the hold is back" "reserved=0.000000" A accounts show acme

# --- zero data retention ------------------------------------------------------
absent "the buyer's content" "$MARKER"
absent "the API key text" "$K2"
absent "the miner key text" "$MK2"
absent "the pepper" "$ENGY_KEY_PEPPER"

# --- store options -------------------------------------------------------------
expect_fail "unknown store option" "store-sqlite has no such option" A -o nope=1 accounts list
expect_fail "not a store plugin" "is not a store plugin" A --store test-proof --plugin-dir "$TEST_PLUGINS" accounts list
expect_fail "missing plugin" "store-nothing" A --store store-nothing accounts list
expect_ok "--db picks another file" "name=solo" A --db "$T/other.db" accounts create solo
[ -f "$T/other.db" ] || fail "--db file"
expect_ok "help needs no store" "usage: engyctl admin keys" A --store store-nothing keys --help

echo "$N_OK passed, 0 failed"
