#!/bin/sh
# The CUDA self-check: cuBLAS SGEMM and our bf16 cast kernel against the
# CPU.  Skips (exit 77) with the reason when the machine has no device.
. "$top_srcdir/tests/integration/lib.sh"
out=$("$top_builddir/cuda/engy-gpu" 2>&1) && rc=0 || rc=$?
echo "$out"
if [ $rc = 3 ]; then echo "SKIP: no CUDA device on this machine"; exit 77; fi
[ $rc = 0 ] || fail "engy-gpu failed (exit $rc)"
echo "$out" | grep -q 'bf16_cast_mismatches=0/' || fail "bf16 cast"
ok "cuBLAS SGEMM and the bf16 cast kernel match the CPU"
echo "$N_OK passed, 0 failed"
