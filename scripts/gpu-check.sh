#!/bin/sh
# SPDX-License-Identifier: MIT
# The CUDA paths on a real GPU, in one run: engy-gpu's self-check (cuBLAS
# SGEMM and our bf16 cast kernel against the CPU), then the reference
# engine's cuBLAS matmul against its CPU matmul on generated checkpoints
# (dense and MoE): the hidden states of the same tokens compared value by
# value, and TOPLOC across the two as miner and auditor use it (proofs of
# the GPU's states verified against the CPU's, and the other way round:
# both must pass); the same tokens through cuBLAS's bf16 GEMMs (kernel
# profile bf16act on the GPU: an honest miner whose numbers differ more)
# must pass against the CPU's float32 states too, and an INT4 cheat on
# the GPU is the control that must be caught.  Then the host CPU's bf16
# instructions, where it has them: the kernel profiles bf16dp
# (AVX512-BF16) and amx (AMX-BF16) on the instruction against their
# definitions in C (the avx2+fma kernel forces those), the hidden states
# of the prompt bit for bit.
#
#   scripts/gpu-check.sh BUILDDIR
#       a --with-cuda build (cuda/engy-gpu, tools/engyctl); exits 0 when
#       every check passes, 1 on a failed check, 77 when there is no GPU
#   scripts/gpu-check.sh --pack BUILDDIR OUT
#       copies engy-gpu, engyctl, this script and the shared libraries
#       they need (but glibc's and CUDA's) into OUT, for a GPU machine
#       that has a CUDA driver and runtime but not the build's libraries;
#       there: OUT/gpu-check.sh OUT
#
# CUDA's libraries (cuBLAS, the runtime) come from ENGY_CUDA_LIBDIR when
# set, else from the build's run path, else from the first directory
# holding libcublas.so.* under /usr/local/cuda, /usr/lib and the Python
# trees of /opt and /usr/local.  ENGY_GPU_CHECK_OUT names a directory
# that keeps the run's files (checkpoints aside); otherwise a temporary
# one is removed at exit.  Only generated weights and token ids are used.
# ENGY_GPU_CHECK_DRY=PROFILE runs the script without a GPU (a check of
# the script itself): engy-gpu is skipped and the CPU with that kernel
# profile (splitk-f32, ...) stands in for the GPU, and splitk for its
# bf16 GEMMs.
set -eu

die() {
	echo "gpu-check: $*" >&2
	exit 1
}

# --- --pack -----------------------------------------------------------------
if [ "${1:-}" = "--pack" ]; then
	[ $# = 3 ] || die "usage: gpu-check.sh --pack BUILDDIR OUT"
	b=$2
	o=$3
	[ -x "$b/cuda/engy-gpu" ] || die "$b/cuda/engy-gpu: not built (configure --with-cuda, make cuda/engy-gpu tools/engyctl)"
	[ -x "$b/tools/engyctl" ] || die "$b/tools/engyctl: not built"
	mkdir -p "$o/bin" "$o/lib"
	cp "$b/cuda/engy-gpu" "$b/tools/engyctl" "$o/bin/"
	cp "$0" "$o/gpu-check.sh"
	for x in "$o/bin/engy-gpu" "$o/bin/engyctl"; do
		ldd "$x" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
	done | sort -u | while read -r name path; do
		case $name in
		libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | \
			libresolv.so.* | libutil.so.* | libanl.so.* | libnss_*.so.* | \
			ld-linux*.so.* | libgcc_s.so.* | libstdc++.so.* | \
			libcuda.so.* | libcudart.so.* | libcublas.so.* | libcublasLt.so.*)
			;;
		*) cp -L "$path" "$o/lib/$name" ;;
		esac
	done
	echo "gpu-check: packed into $o: $(ls "$o/bin" | tr '\n' ' ')and $(ls "$o/lib" | wc -l) libraries"
	exit 0
fi

[ $# = 1 ] || die "usage: gpu-check.sh BUILDDIR | --pack BUILDDIR OUT"
d=$1
if [ -x "$d/cuda/engy-gpu" ]; then
	GPU=$d/cuda/engy-gpu
	CTL=$d/tools/engyctl
elif [ -x "$d/bin/engy-gpu" ]; then
	GPU=$d/bin/engy-gpu
	CTL=$d/bin/engyctl
	LD_LIBRARY_PATH=$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
elif [ -n "${ENGY_GPU_CHECK_DRY:-}" ] && [ -x "$d/tools/engyctl" ]; then
	GPU=$d/tools/engyctl	# a build without CUDA: only its libraries matter
	CTL=$d/tools/engyctl
else
	die "$d: neither a --with-cuda build nor a --pack directory"
fi
[ -x "$CTL" ] || die "$CTL: not built"

# The sonames the build needs (libcublas.so.13, libcudart.so.13, ...),
# each looked for where the build's run path does not find it.
if [ -z "${ENGY_CUDA_LIBDIR:-}" ]; then
	for so in $(ldd "$GPU" | awk '/=> not found/ && /libcu/ { print $1 }'); do
		dir=$(find /usr/local/cuda /usr/lib /usr/local/lib /opt -name "$so" \
			2>/dev/null | head -n 1 | xargs -r dirname)
		[ -n "$dir" ] || die "$so not found: set ENGY_CUDA_LIBDIR"
		case ":${ENGY_CUDA_LIBDIR:-}:" in
		*":$dir:"*) ;;
		*) ENGY_CUDA_LIBDIR=${ENGY_CUDA_LIBDIR:+$ENGY_CUDA_LIBDIR:}$dir ;;
		esac
	done
	[ -z "${ENGY_CUDA_LIBDIR:-}" ] || echo "gpu-check: CUDA's libraries from $ENGY_CUDA_LIBDIR"
fi
if [ -n "${ENGY_CUDA_LIBDIR:-}" ]; then
	LD_LIBRARY_PATH=$ENGY_CUDA_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
export LD_LIBRARY_PATH
PY=$(command -v python3) || die "python3 not found (it compares the hidden states)"

if [ -n "${ENGY_GPU_CHECK_OUT:-}" ]; then
	W=$ENGY_GPU_CHECK_OUT
	mkdir -p "$W"
else
	W=$(mktemp -d)
fi
M=$(mktemp -d)
trap 'rm -rf "$M"; [ -n "${ENGY_GPU_CHECK_OUT:-}" ] || rm -rf "$W"' EXIT

n_ok=0
n_fail=0
ok() {
	n_ok=$((n_ok + 1))
	echo "ok $((n_ok + n_fail)) - $*"
}
bad() {
	n_fail=$((n_fail + 1))
	echo "not ok $((n_ok + n_fail)) - $*"
}

DEV="--device cuda"
DEV16="--device cuda --kernel-profile bf16act"
LABEL="GPU (cuBLAS)"
if [ -n "${ENGY_GPU_CHECK_DRY:-}" ]; then
	DEV="--device cpu --kernel-profile $ENGY_GPU_CHECK_DRY"
	DEV16="--device cpu --kernel-profile splitk"
	LABEL="the stand-in ($ENGY_GPU_CHECK_DRY)"
	echo "gpu-check: a dry run: the CPU's $ENGY_GPU_CHECK_DRY profile stands in for the GPU"
fi

# --- 1. engy-gpu ------------------------------------------------------------
echo "== engy-gpu"
if [ -n "${ENGY_GPU_CHECK_DRY:-}" ]; then
	echo "engy-gpu: skipped (dry run)"
else
	rc=0
	"$GPU" >"$W/engy-gpu.out" 2>&1 || rc=$?
	cat "$W/engy-gpu.out"
	if [ $rc = 3 ]; then
		echo "SKIP: no GPU: $(sed -n 's/^engy-gpu: no GPU (\(.*\))$/\1/p' "$W/engy-gpu.out")"
		exit 77
	fi
	if [ $rc = 0 ] && grep -q 'bf16_cast_mismatches=0/' "$W/engy-gpu.out"; then
		ok "engy-gpu: cuBLAS SGEMM and the bf16 cast kernel match the CPU"
	else
		bad "engy-gpu (exit $rc)"
	fi
fi

# --- 2. the reference engine, CUDA against CPU ------------------------------
# ids N VOCAB SEED: N token ids in [0, VOCAB), from a fixed generator.
ids() {
	awk -v n="$1" -v v="$2" -v s="$3" 'BEGIN {
		x = s; o = "";
		for (i = 0; i < n; i++) {
			x = (x * 1103515245 + 12345) % 2147483648;
			o = o (i ? " " : "") (int(x / 65536) % v);
		}
		print o }'
}

P_LEN=96
GEN=129
TOPK=128
DBS=32

# compare A B HIDDEN ROWS MAX: the two row files value by value; exit 1
# when the median row's largest difference (over the row's largest value)
# is MAX or more ("-": report only).
compare() {
	"$PY" - "$@" <<'EOF'
import struct, sys
a, b = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
h, rows, lim = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
if len(a) != rows * h * 4 or len(b) != len(a):
    print("rows: %d and %d bytes, want %d" % (len(a), len(b), rows * h * 4)); sys.exit(1)
n = rows * h
x, y = struct.unpack("<%df" % n, a), struct.unpack("<%df" % n, b)
same = sum(1 for i in range(n) if x[i] == y[i])
rel = []
for r in range(rows):
    s = max(abs(v) for v in y[r * h:(r + 1) * h]) or 1.0
    rel.append(max(abs(x[i] - y[i]) for i in range(r * h, (r + 1) * h)) / s)
rel.sort()
med = rel[len(rel) // 2]
print("%d rows x %d: %d of %d values bit-identical (%.1f %%); a row's largest difference over its largest value: median %.3g, max %.3g"
      % (rows, h, same, n, 100.0 * same / n, med, rel[-1]))
sys.exit(0 if lim == "-" or med < float(lim) else 1)
EOF
}

check_model() {
	arch=$1
	tag=$2
	m=$M/$tag
	"$CTL" mkmodel --arch "$arch" --size small --seed 53 --out "$m" --quiet
	"$CTL" mkmodel --arch "$arch" --size small --seed 53 --out "$m-int4" \
		--quant int4 --quiet
	vocab=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["vocab_size"])' "$m/config.json")
	hid=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["hidden_size"])' "$m/config.json")
	prompt=$(ids $P_LEN "$vocab" 7)
	echo "== $tag ($arch small: hidden $hid, vocab $vocab): $P_LEN prompt ids, $GEN generated"

	# The GPU miner: greedy generation, the states of every position fed.
	# shellcheck disable=SC2086
	if ! "$CTL" ref --checkpoint "$m" --ids "$prompt" --generate $GEN \
		--ignore-eos $DEV --hidden "$W/$tag-cuda.f32" \
		>"$W/$tag-cuda.ids" 2>"$W/$tag-cuda.err"; then
		bad "$tag: engyctl ref $DEV: $(tail -n 3 "$W/$tag-cuda.err")"
		return
	fi
	# The CPU on its own: the same prompt, greedy.
	"$CTL" ref --checkpoint "$m" --ids "$prompt" --generate $GEN \
		--ignore-eos --device cpu >"$W/$tag-cpu.ids" 2>"$W/$tag-cpu.err"
	gen=$(cat "$W/$tag-cuda.ids")
	fed="$prompt $(echo "$gen" | awk '{ NF = NF - 1; print }')"
	rows=$(echo "$fed" | wc -w)
	# The auditor: the GPU's tokens recomputed on the CPU in one prefill.
	"$CTL" ref --checkpoint "$m" --ids "$fed" --device cpu \
		--hidden "$W/$tag-cpu.f32" >/dev/null 2>"$W/$tag-cpu-fed.err"
	# A bf16 GPU miner: the same tokens through bf16 GEMMs.
	# shellcheck disable=SC2086
	if ! "$CTL" ref --checkpoint "$m" --ids "$fed" $DEV16 \
		--hidden "$W/$tag-bf16.f32" >/dev/null 2>"$W/$tag-bf16.err"; then
		bad "$tag: engyctl ref $DEV16: $(tail -n 3 "$W/$tag-bf16.err")"
		return
	fi
	# The cheat: the INT4 model on the GPU, fed the same tokens.
	# shellcheck disable=SC2086
	"$CTL" ref --checkpoint "$m-int4" --ids "$fed" $DEV \
		--hidden "$W/$tag-int4.f32" >/dev/null 2>"$W/$tag-int4.err"
	sed "s/^/  cuda: /" "$W/$tag-cuda.err"
	sed "s/^/  cpu:  /" "$W/$tag-cpu.err"
	sed "s/^/  bf16: /" "$W/$tag-bf16.err"

	same=$(awk 'NR == FNR { for (i = 1; i <= NF; i++) a[i] = $i; n = NF; next }
		{ k = 0; while (k < n && k < NF && a[k + 1] == $(k + 1)) k++; print k }' \
		"$W/$tag-cuda.ids" "$W/$tag-cpu.ids")
	echo "  greedy tokens: the first $same of $GEN the same on GPU and CPU"

	# Another summation order moves a row by float32 rounding (~1e-6);
	# a routing choice that flips in the MoE moves a row more, not most.
	if compare "$W/$tag-cuda.f32" "$W/$tag-cpu.f32" "$hid" "$rows" 1e-3 \
		>"$W/$tag-cmp.out"; then
		ok "$tag: hidden states, $LABEL against CPU: $(cat "$W/$tag-cmp.out")"
	else
		bad "$tag: hidden states: $(cat "$W/$tag-cmp.out")"
	fi
	compare "$W/$tag-bf16.f32" "$W/$tag-cpu.f32" "$hid" "$rows" - |
		sed "s/^/  bf16 GEMMs against CPU: /"
	compare "$W/$tag-int4.f32" "$W/$tag-cpu.f32" "$hid" "$rows" - |
		sed "s/^/  INT4 against CPU: /"

	tl="--topk $TOPK --dbs $DBS --hidden $hid --dtype f32 --prefill $P_LEN"
	# The devnet model spec's thresholds (toploc_v 10, toploc_p 0.99,
	# toploc_mant_mean and toploc_mant_median 2).
	vl="--max-mismatches 10 --min-pass 0.99 --max-mant-mean 2 --max-mant-median 2"
	for f in cuda cpu bf16 int4; do
		# shellcheck disable=SC2086
		"$CTL" toploc prove $tl "$W/$tag-$f.f32" >"$W/$tag-$f.proofs"
	done
	for pair in cuda:cpu cpu:cuda bf16:cpu int4:cpu; do
		p=${pair%%:*}
		v=${pair#*:}
		rc=0
		# shellcheck disable=SC2086
		"$CTL" toploc verify $tl $vl --proofs "$W/$tag-$p.proofs" \
			"$W/$tag-$v.f32" >"$W/$tag-$p-$v.verify" 2>&1 || rc=$?
		verdict=$(tail -n 1 "$W/$tag-$p-$v.verify")
		sed "s/^/  $p proofs, $v states: /" "$W/$tag-$p-$v.verify"
		want=0
		[ "$p" = int4 ] && want=3
		if [ $rc = $want ]; then
			ok "$tag: TOPLOC, $p's proofs against $v's states: exit $rc ($verdict)"
		else
			bad "$tag: TOPLOC, $p's proofs against $v's states: exit $rc, want $want ($verdict)"
		fi
	done
}

# instr_profiles TAG CHECKPOINT IDS: each bf16 instruction profile on the
# host CPU's instruction against its definition in C, bit for bit.
instr_profiles() {
	tag=$1
	for prof in bf16dp amx; do
		# one token first: which way the profile runs here
		"$CTL" ref --checkpoint "$2" --ids 1 --device cpu \
			--kernel-profile $prof >/dev/null 2>"$W/$tag-$prof.err" ||
			{ bad "$tag: engyctl ref --kernel-profile $prof: $(tail -n 1 "$W/$tag-$prof.err")"; continue; }
		how=$(sed -n 's/.*, profile [a-z0-9]* on \(.*\)$/\1/p' "$W/$tag-$prof.err")
		if [ "$how" = emulated ] || [ -z "$how" ]; then
			echo "  $prof: the host CPU does not run it on the instruction (${how:-?}): not compared"
			continue
		fi
		"$CTL" ref --checkpoint "$2" --ids "$3" --device cpu \
			--kernel-profile $prof --hidden "$W/$tag-$prof.f32" \
			>/dev/null 2>"$W/$tag-$prof.err"
		ENGY_MM_KERNEL=avx2+fma "$CTL" ref --checkpoint "$2" --ids "$3" \
			--device cpu --kernel-profile $prof --hidden "$W/$tag-$prof-def.f32" \
			>/dev/null 2>"$W/$tag-$prof-def.err"
		sed "s/^/  $prof: /" "$W/$tag-$prof.err" "$W/$tag-$prof-def.err"
		if cmp -s "$W/$tag-$prof.f32" "$W/$tag-$prof-def.f32" &&
			[ -s "$W/$tag-$prof.f32" ]; then
			ok "$tag: kernel profile $prof on $how: the prompt's hidden states bit-identical to its definition in C"
		else
			bad "$tag: kernel profile $prof on $how: hidden states differ from its definition in C"
		fi
	done
}

check_model qwen3 dense
check_model qwen3-moe moe
echo "== the host CPU's bf16 instructions"
for arch in qwen3 qwen3-moe; do
	"$CTL" mkmodel --arch $arch --size small --seed 53 --out "$M/$arch-i" --quiet
	v=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["vocab_size"])' "$M/$arch-i/config.json")
	instr_profiles "$arch" "$M/$arch-i" "$(ids $P_LEN "$v" 7)"
done

echo "$n_ok passed, $n_fail failed"
[ $n_fail = 0 ]
