#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/gpu-check.sh, the one-run check of the CUDA paths on a GPU,
# without a GPU (ENGY_GPU_CHECK_DRY): the CPU's splitk-f32 kernel profile
# stands in for cuBLAS, so that the script's own logic runs in every
# suite: generated dense and MoE checkpoints, hidden states of the same
# tokens compared, TOPLOC proofs of each side verified against the other
# (pass), those of the bf16 stand-in (splitk) against the CPU's states
# (pass) and an INT4 checkpoint's proofs against the CPU's states (cheat).
# Then the host CPU's bf16 instruction profiles, where it runs them.
# On a machine with a GPU, scripts/test.sh runs the script itself.
# Oracle: engy's TOPLOC verifier and the devnet model spec's thresholds;
# the INT4 control must be caught, so the check can fail.
. "$top_srcdir/tests/integration/lib.sh"
command -v python3 >/dev/null 2>&1 || skip_or_fail "python3 not found"
rc=0
ENGY_GPU_CHECK_DRY=splitk-f32 ENGY_GPU_CHECK_OUT="$T/run" \
	sh "$top_srcdir/scripts/gpu-check.sh" "$top_builddir" >"$T/out" 2>&1 || rc=$?
cat "$T/out"
[ $rc = 0 ] || fail "gpu-check.sh exited $rc"
for tag in dense moe; do
	grep -q "^ok [0-9]* - $tag: hidden states" "$T/out" || fail "$tag: hidden states"
	grep -q "^ok [0-9]* - $tag: TOPLOC, cuda's proofs against cpu's states: exit 0 (verdict=pass" "$T/out" ||
		fail "$tag: the stand-in's proofs against the CPU's states"
	grep -q "^ok [0-9]* - $tag: TOPLOC, cpu's proofs against cuda's states: exit 0 (verdict=pass" "$T/out" ||
		fail "$tag: the CPU's proofs against the stand-in's states"
	grep -q "^ok [0-9]* - $tag: TOPLOC, bf16's proofs against cpu's states: exit 0 (verdict=pass" "$T/out" ||
		fail "$tag: the bf16 stand-in's proofs against the CPU's states"
	grep -q "^ok [0-9]* - $tag: TOPLOC, int4's proofs against cpu's states: exit 3 (verdict=cheat" "$T/out" ||
		fail "$tag: the INT4 control not caught"
	ok "$tag: states agree, TOPLOC passes both ways and for bf16, INT4 caught"
done
# 10, and 2 a bf16 instruction this CPU runs (bf16dp, amx: against
# their definitions in C)
n=$(sed -n 's/^\([0-9]*\) passed, 0 failed$/\1/p' "$T/out")
[ -n "$n" ] && [ "$n" -ge 10 ] || fail "the script's own count"
for prof in bf16dp amx; do
	grep -q "^  $prof: the host CPU does not run it on the instruction" "$T/out" ||
		[ "$(grep -c "^ok [0-9]* - qwen3[a-z-]*: kernel profile $prof on " "$T/out")" = 2 ] ||
		fail "$prof: neither compared nor said why not"
done
ok "gpu-check.sh's dry run: $n passed"
echo "$N_OK passed, 0 failed"
