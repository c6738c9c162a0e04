#!/bin/sh
# The CUDA self-check: cuBLAS SGEMM and our bf16 cast kernel against the
# CPU.  Skips (exit 77) when the machine has no GPU, and only then: no
# device (cudaErrorNoDevice, or none counted) or no CUDA driver installed
# at all, the skip line saying which, with the runtime's error name and
# text.  A driver that is there but too old, or any other CUDA error,
# fails with engy-gpu's own message.  Expected values: the CPU's (engy-gpu
# computes the reference in double precision itself).
# Oracle: cuBLAS SGEMM and the bf16 cast against a CPU computation (engy-
# gpu's self-check).
. "$top_srcdir/tests/integration/lib.sh"
out=$("$top_builddir/cuda/engy-gpu" 2>&1) && rc=0 || rc=$?
echo "$out"
if [ $rc = 3 ]; then
	echo "SKIP: no GPU: $(echo "$out" | sed -n 's/^engy-gpu: no GPU (\(.*\))$/\1/p')"
	exit 77
fi
[ $rc = 0 ] || fail "engy-gpu failed (exit $rc): $(echo "$out" | grep '^engy-gpu: ' | tail -3)"
echo "$out" | grep -q 'bf16_cast_mismatches=0/' || fail "bf16 cast"
ok "cuBLAS SGEMM and the bf16 cast kernel match the CPU"
echo "$N_OK passed, 0 failed"
