#!/bin/sh
# SPDX-License-Identifier: MIT
# engyctl toploc: prove and verify from files and stdin, the verdicts and
# their exit codes (0 pass, 3 cheat, 4 unproven), and every error path
# (1 bad input, 2 usage), each with a one-line message.
# Oracle: engy's prover against engy's verifier (self-consistency) and exit
# codes from the CLI's documented contract; known-answer TOPLOC checks are
# in check_toploc.
. "$top_srcdir/tests/integration/lib.sh"
set +e	# the checks below count their failures themselves

command -v perl >/dev/null 2>&1 || skip_or_fail "perl not found"
command -v base64 >/dev/null 2>&1 || skip_or_fail "base64 not found"

tmp=$T	# lib.sh removes it on exit
n_fail=0
n_pass=0

ok() { n_pass=$((n_pass + 1)); }
bad() { echo "FAIL: $*" >&2; n_fail=$((n_fail + 1)); }

# gen MODEL NOISE ROWS HIDDEN DTYPE: little-endian rows of Gaussian values
# from "model" MODEL, times (1 + NOISE * Gaussian); bf16 is the
# round-to-nearest-even cast of the f32 value.
gen() {
	perl -e '
		my ($model, $noise, $rows, $hidden, $dtype) = @ARGV;
		my @s = ($model * 7919 + 1, 4242);
		sub u { my $i = shift;
			{ use integer;
			  $s[$i] = ($s[$i] * 1103515245 + 12345) & 0x7FFFFFFF; }
			return ($s[$i] + 0.5) / 2147483648; }
		sub g { my $i = shift;
			return sqrt(-2 * log(u($i))) * cos(6.283185307179586 * u($i)); }
		binmode STDOUT;
		for (1 .. $rows * $hidden) {
			my $x = g(0);
			$x *= 1 + $noise * g(1) if $noise > 0;
			my $f = pack("f<", $x);
			if ($dtype eq "f32") { print $f; next; }
			my $b = unpack("V", $f);
			$b = (($b + 0x7FFF + (($b >> 16) & 1)) >> 16) & 0xFFFF;
			print pack("v", $b);
		}' "$@"
}

# expect RC CMD...: run, keep stdout/stderr in $tmp/out and $tmp/err.
expect() {
	want=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -ne "$want" ]; then
		bad "exit $got (want $want): $*"
		sed 's/^/  stderr: /' "$tmp/err" >&2
		return 1
	fi
	ok
}

# One error line on stderr that mentions $1.
one_line_about() {
	if [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -q -- "$1" "$tmp/err"; then
		bad "stderr is not one line about '$1':"
		sed 's/^/  /' "$tmp/err" >&2
	else
		ok
	fi
}

last_line_is() {
	if [ "$(tail -n 1 "$tmp/out")" != "$1" ]; then
		bad "last line '$(tail -n 1 "$tmp/out")', want '$1'"
	else
		ok
	fi
}

H=256
gen 1 0 70 $H bf16 >"$tmp/rows.bf16"
gen 1 0 70 $H f32 >"$tmp/rows.f32"
gen 1 0.01 70 $H bf16 >"$tmp/noisy.bf16"
gen 2 0 70 $H bf16 >"$tmp/other.bf16"
[ "$(wc -c <"$tmp/rows.bf16")" -eq $((70 * H * 2)) ] && ok || bad "generator"

K="--topk 128 --dbs 32 --hidden $H"
LIM="--max-mismatches 40 --min-pass 0.99"

# ---- prove ----
expect 0 "$ENGYCTL" toploc prove $K "$tmp/rows.bf16" &&
	cp "$tmp/out" "$tmp/proofs"
[ "$(wc -l <"$tmp/proofs")" -eq 3 ] && ok || bad "want 3 proofs (70 rows / 32)"
while read -r line; do
	[ ${#line} -eq 344 ] && ok || bad "proof line of ${#line} chars"
	n=$(printf '%s' "$line" | base64 -d | wc -c)
	[ "$n" -eq 258 ] && ok || bad "proof of $n bytes, want 258"
	# every index of a 32 x 256 chunk is < 65497: m = 65497 = ffd9
	h=$(printf '%s' "$line" | base64 -d | od -An -tx1 -N2 | tr -d ' ')
	[ "$h" = ffd9 ] && ok || bad "modulus bytes $h"
done <"$tmp/proofs"
expect 0 "$ENGYCTL" toploc prove $K <"$tmp/rows.bf16"
cmp -s "$tmp/out" "$tmp/proofs" && ok || bad "stdin gives other proofs"
expect 0 "$ENGYCTL" toploc prove $K --dtype f32 - <"$tmp/rows.f32"
cmp -s "$tmp/out" "$tmp/proofs" && ok || bad "f32 rows give other proofs"
expect 0 "$ENGYCTL" toploc prove $K --dtype bf16 --prefill 6 \
	--no-skip-prefill "$tmp/rows.bf16" && cp "$tmp/out" "$tmp/proofs_pf"
[ "$(wc -l <"$tmp/proofs_pf")" -eq 3 ] && ok || bad "prefill + 2 decode proofs"

# ---- verify: verdicts ----
expect 0 "$ENGYCTL" toploc verify $K $LIM --proofs "$tmp/proofs" \
	"$tmp/rows.bf16"
[ "$(grep -c '^chunk=[0-2] exp_mismatches=0 mant_mean=0 mant_median=0$' \
	"$tmp/out")" -eq 3 ] && ok || bad "same rows: want 3 exact chunks"
last_line_is "verdict=pass reason=ok chunks=3 passed=3"
expect 0 "$ENGYCTL" toploc verify $K $LIM --proofs "$tmp/proofs" \
	<"$tmp/noisy.bf16"
last_line_is "verdict=pass reason=ok chunks=3 passed=3"
expect 0 "$ENGYCTL" toploc verify $K $LIM --dtype f32 \
	--proofs "$tmp/proofs" "$tmp/rows.f32"
expect 3 "$ENGYCTL" toploc verify $K $LIM --proofs "$tmp/proofs" \
	"$tmp/other.bf16"
last_line_is "verdict=cheat reason=exp_mismatch chunks=3 passed=0"
expect 3 "$ENGYCTL" toploc verify $K $LIM --max-mant-mean 0.1 \
	--proofs "$tmp/proofs" "$tmp/noisy.bf16"
last_line_is "verdict=cheat reason=mant_mean chunks=3 passed=0"
expect 0 "$ENGYCTL" toploc verify $K $LIM --max-mant-mean 10 \
	--max-mant-median 8 --proofs "$tmp/proofs" "$tmp/noisy.bf16"
expect 0 "$ENGYCTL" toploc verify $K $LIM --prefill 6 --no-skip-prefill \
	--proofs "$tmp/proofs_pf" "$tmp/rows.bf16"
expect 4 "$ENGYCTL" toploc verify $K $LIM --prefill 6 \
	--proofs "$tmp/proofs_pf" "$tmp/rows.bf16"

# ---- verify: unusable proofs ----
sed '2s/^./*/' "$tmp/proofs" >"$tmp/p_b64"
expect 4 "$ENGYCTL" toploc verify $K $LIM --proofs "$tmp/p_b64" \
	"$tmp/rows.bf16"
last_line_is "verdict=unproven reason=bad_base64 chunks=1 passed=1"
one_line_about "line 2"
head -n 2 "$tmp/proofs" >"$tmp/p_short"
expect 4 "$ENGYCTL" toploc verify $K $LIM --proofs "$tmp/p_short" \
	"$tmp/rows.bf16"
one_line_about "2 proofs for 3 chunks"
{ head -n 2 "$tmp/proofs"; head -c 258 /dev/zero | base64 -w 0; echo; } \
	>"$tmp/p_null"
expect 4 "$ENGYCTL" toploc verify $K $LIM --proofs "$tmp/p_null" \
	"$tmp/rows.bf16"
last_line_is "verdict=unproven reason=null_proof chunks=2 passed=2"
one_line_about "line 3"
expect 4 "$ENGYCTL" toploc verify --topk 64 --dbs 32 --hidden $H $LIM \
	--proofs "$tmp/proofs" "$tmp/rows.bf16"
last_line_is "verdict=unproven reason=bad_length chunks=0 passed=0"
: >"$tmp/empty"
expect 4 "$ENGYCTL" toploc verify $K $LIM --proofs "$tmp/empty" \
	"$tmp/rows.bf16"
one_line_about "0 proofs for 3 chunks"

# ---- bad input: exit 1, one line naming it ----
head -c 1001 "$tmp/rows.bf16" >"$tmp/odd"
expect 1 "$ENGYCTL" toploc prove $K "$tmp/odd"
one_line_about "odd: 1001 bytes is not a whole number of rows"
expect 1 "$ENGYCTL" toploc verify $K $LIM --proofs "$tmp/proofs" "$tmp/odd"
one_line_about "odd"
expect 1 "$ENGYCTL" toploc prove $K "$tmp/empty"
one_line_about "no rows"
expect 1 "$ENGYCTL" toploc prove $K "$tmp/missing"
one_line_about "missing"
expect 1 "$ENGYCTL" toploc verify $K $LIM --proofs "$tmp/missing" \
	"$tmp/rows.bf16"
one_line_about "missing"
expect 1 "$ENGYCTL" toploc prove --topk 128 --dbs 1 --hidden 64 \
	"$tmp/rows.bf16"
one_line_about "fewer than --topk 128"
expect 1 "$ENGYCTL" toploc prove $K --prefill 71 "$tmp/rows.bf16"
one_line_about "prefill"

# ---- usage: exit 2 ----
expect 2 "$ENGYCTL" toploc
expect 2 "$ENGYCTL" toploc bogus
one_line_about "bogus"
expect 2 "$ENGYCTL" toploc prove --dbs 32 --hidden $H "$tmp/rows.bf16"
one_line_about "required"
expect 2 "$ENGYCTL" toploc prove $K --dtype fp8 "$tmp/rows.bf16"
one_line_about "dtype"
expect 2 "$ENGYCTL" toploc prove $K --topk 0 "$tmp/rows.bf16"
one_line_about "topk"
expect 2 "$ENGYCTL" toploc prove $K --frobnicate "$tmp/rows.bf16"
one_line_about "frobnicate"
expect 2 "$ENGYCTL" toploc prove $K $LIM "$tmp/rows.bf16"
one_line_about "options of verify"
expect 2 "$ENGYCTL" toploc prove $K --topk "$tmp/rows.bf16"
one_line_about "topk"
expect 2 "$ENGYCTL" toploc prove $K a b
expect 2 "$ENGYCTL" toploc verify $K --proofs "$tmp/proofs" "$tmp/rows.bf16"
one_line_about "required"
expect 2 "$ENGYCTL" toploc verify $K --max-mismatches 40 --min-pass 1.5 \
	--proofs "$tmp/proofs" "$tmp/rows.bf16"
one_line_about "min-pass"
expect 2 "$ENGYCTL" toploc verify $K $LIM --max-mant-median zz \
	--proofs "$tmp/proofs" "$tmp/rows.bf16"
one_line_about "bad value 'zz' for --max-mant-median"
expect 0 "$ENGYCTL" toploc --help
grep -q "exits 0 for pass, 3 for" "$tmp/out" && ok || bad "help text"
expect 0 "$ENGYCTL" toploc verify --help

echo "$n_pass passed, $n_fail failed"
[ "$n_fail" -eq 0 ]
