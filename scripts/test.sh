#!/usr/bin/env bash
# The project's one test command (README, .ci/run): installs what is
# missing (idempotent), bootstraps, configures, builds, runs every test,
# runs the whole suite again under ASan+UBSan (leaks reported), and checks
# that the release tarball builds and passes (make distcheck), and fuzzes
# every fuzz target briefly under libFuzzer (clang).
#
#   scripts/test.sh            everything
#   ENGY_TEST_QUICK=1 ...      skip the sanitizer pass, distcheck and libFuzzer
#   ENGY_BUILD_ONLY=1 ...      install what is missing and build build-main/
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)
log() { printf '\n== %s\n' "$*"; }

# --- 1. packages -----------------------------------------------------------
APT_PKGS="build-essential autoconf automake autoconf-archive libtool pkg-config
  libevent-dev libconfuse-dev check libcurl4-openssl-dev libssl-dev
  libcjson-dev libsodium-dev libpcre2-dev libutf8proc-dev libsqlite3-dev
  libmimalloc-dev
  postgresql libpq-dev
  libsystemd-dev systemd
  clang libclang-rt-14-dev clang-format
  curl ca-certificates chromium
  python3-numpy python3-venv"
command -v node >/dev/null 2>&1 || APT_PKGS="$APT_PKGS nodejs npm"
command -v npm >/dev/null 2>&1 || APT_PKGS="$APT_PKGS npm"
command -v cargo >/dev/null 2>&1 || APT_PKGS="$APT_PKGS cargo"
missing=()
for p in $APT_PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
    missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- 2. npm test peers (independent implementations the tests compare to) ---
if [ -f tests/peers/package-lock.json ]; then
  log "installing npm test peers"
  npm ci --prefix tests/peers --no-audit --no-fund --loglevel=error
fi
export ENGY_PEERS="$top/tests/peers/node_modules"
# blst (BLS12-381) for the validator's timelocked commit-reveal: built from
# the crates.io crate's C sources (scripts/build-blst.sh), found by
# configure through --with-blst like any other dependency.
log "building blst for commit-reveal"
blst_dir="$top/build-deps/blst"
scripts/build-blst.sh "$blst_dir"
# Subtensor runtime metadata with commit-reveal v3 (spec 219/224), as
# @bitgo/sdk-coin-tao 1.16.4 ships it: only its tarball (npm pack; the
# package's own dependency tree is not installed).  tests/integration/
# commit_peer.sh builds the commit call against it.
tao_dir="$top/build-deps/sdk-coin-tao-1.16.4"
if [ ! -f "$tao_dir/package/dist/src/resources/testnet.js" ]; then
  log "fetching @bitgo/sdk-coin-tao 1.16.4 (its tarball only) for subtensor metadata"
  mkdir -p "$tao_dir"
  (cd "$tao_dir" && npm pack @bitgo/sdk-coin-tao@1.16.4 --silent >/dev/null &&
    tar xzf bitgo-sdk-coin-tao-1.16.4.tgz package/dist/src/resources)
fi
export ENGY_TAO_RESOURCES="$tao_dir/package/dist/src/resources"

# --- 2b. Python test peers and the CUDA toolkit (PyPI) ---------------------
# A virtualenv (tests/peers/venv, ignored by git) holding the pinned
# tests/peers/requirements.txt: the reference TOPLOC library with torch,
# transformers and the public miner's other imports, bittensor-drand, and
# NVIDIA's CUDA 13.2 wheels (nvcc, the runtime, cuBLAS, cuDNN) that the
# CUDA build below compiles and links against.  Installed with --no-deps
# (the file lists every package), and only when the file changed since
# the last install: otherwise the virtualenv is reused as it is.  Not
# for ENGY_BUILD_ONLY (devnet.sh's build): nothing there needs it.
venv="$top/tests/peers/venv"
req_sum=$(sha256sum tests/peers/requirements.txt | cut -d' ' -f1)
if [ -z "${ENGY_BUILD_ONLY:-}" ] &&
  [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$req_sum" ]; then
  log "installing Python test peers and the CUDA wheels (tests/peers/requirements.txt)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  t0=$(date +%s)
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps \
    -r tests/peers/requirements.txt
  echo "$req_sum" >"$venv/.requirements.sha256"
  echo "installed in $(($(date +%s) - t0)) s: $(du -sh "$venv" | cut -f1)"
fi
export ENGY_PYTHON="$venv/bin/python"
cuda_dir=$(echo "$venv"/lib/python3*/site-packages/nvidia/cu13)
# The shared fixtures CI lays beside the checkout, named absolutely so the
# distcheck tree (elsewhere) finds them too.
spec="$top/../shared/fixtures/subtensor/raw_spec_testfinney.json"
[ -f "$spec" ] && export ENGY_SUBTENSOR_SPEC="${ENGY_SUBTENSOR_SPEC:-$(cd "$(dirname "$spec")" && pwd)/$(basename "$spec")}"
# In CI, whatever a test needs is this command's to install, build, start
# or lay out (the peers above, node, PostgreSQL, numpy, the Python peers,
# every plugin, the shared fixtures): a test that would skip for want of one fails instead
# (tests/integration/lib.sh, skip_or_fail).  Only the no-GPU skip stays.
if [ "${CI:-}" = true ]; then
  export ENGY_REQUIRE_PEERS=1
fi

# --- 3. build and test -------------------------------------------------------
summary=()
run_suite() {  # name, configure flags...
  local name=$1; shift
  log "$name: configure $*"
  mkdir -p "build-$name"
  (cd "build-$name" && ../configure -q --enable-werror --with-blst="$blst_dir" "$@")
  log "$name: build"
  make -C "build-$name" -j"$jobs" >/dev/null
  log "$name: make check"
  local rc=0
  make -C "build-$name" -j"$jobs" check || rc=$?
  local t=build-$name/test-suite.log
  local pass fail skip
  pass=$(sed -n 's/^# PASS: *//p' "$t"); fail=$(sed -n 's/^# FAIL: *//p' "$t")
  skip=$(sed -n 's/^# SKIP: *//p' "$t")
  fail=$((fail + $(sed -n 's/^# ERROR: *//p' "$t")))
  summary+=("$name: $pass passed, $fail failed, $skip skipped")
  if [ $rc -ne 0 ]; then
    cat "$t"
    printf '%s\n' "${summary[@]}"
    exit 1
  fi
}

log "bootstrap"
./autogen.sh >/dev/null 2>&1 || ./autogen.sh
if [ -n "${ENGY_BUILD_ONLY:-}" ]; then
  log "main: configure and build (no tests)"
  mkdir -p build-main
  (cd build-main && ../configure -q --enable-werror --with-blst="$blst_dir")
  make -C build-main -j"$jobs" >/dev/null
  exit 0
fi
# The committed .clang-format is followed: every C file as it formats.
log "style: clang-format --dry-run on every C source"
if [ -d .git ]; then c_files=$(git ls-files '*.c' '*.h')
else c_files=$(find . -name '*.[ch]' -not -path './build*' -not -path '*/node_modules/*' -not -path './tests/peers/venv/*'); fi
unformatted=$(for f in $c_files; do clang-format --style=file "$f" | cmp -s - "$f" || echo "$f"; done)
if [ -n "$unformatted" ]; then
  echo "$unformatted" | head -20
  echo "style: 0 passed, 1 failed (clang-format -i the files above)"; exit 1
fi
summary+=("style: 1 passed, 0 failed")
run_suite main
# The CUDA paths compile and link on every run: a build of only the CUDA
# objects (engy-gpu and the reference engine's cuBLAS matmul, with the
# backend-ref plugin linking it) against the toolkit from the wheels, then
# the GPU self-check and scripts/gpu-check.sh (engyctl's reference engine
# on cuBLAS against the CPU, hidden states and TOPLOC verdicts), which
# skip on a machine without a GPU, saying why.
log "cuda: configure --with-cuda=$cuda_dir, build the CUDA paths"
mkdir -p build-cuda
(cd build-cuda && ../configure -q --enable-werror --with-cuda="$cuda_dir")
grep -q '^#define HAVE_CUDA 1' build-cuda/config.h
make -C build-cuda -j"$jobs" cuda/engy-gpu tools/engyctl plugins/backend-ref/backend-ref.la >/dev/null
gpu_rc=0
(cd build-cuda && top_srcdir=$top top_builddir=$top/build-cuda \
  sh "$top/tests/integration/gpu.sh") || gpu_rc=$?
case $gpu_rc in
  0) summary+=("cuda: built and linked; gpu.sh: 1 passed, 0 failed") ;;
  77) summary+=("cuda: built and linked; gpu.sh: 0 passed, 0 failed, 1 skipped") ;;
  *) echo "cuda: gpu.sh failed (exit $gpu_rc)"; printf '%s\n' "${summary[@]}"; exit 1 ;;
esac
if [ $gpu_rc = 0 ]; then
  scripts/gpu-check.sh build-cuda || {
    echo "cuda: gpu-check.sh failed"; printf '%s\n' "${summary[@]}"; exit 1; }
  summary+=("cuda: gpu-check.sh passed")
fi
if [ -z "${ENGY_TEST_QUICK:-}" ]; then
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export CK_TIMEOUT_MULTIPLIER=4 ENGY_TEST_TIME_SCALE=4
  # Plugins stay mapped at exit so LeakSanitizer can name their frames
  # (a dlclose'd module's allocations show as <unknown module>).
  export ENGY_NO_DLCLOSE=1
  run_suite asan --enable-sanitizers
  unset ASAN_OPTIONS UBSAN_OPTIONS ENGY_NO_DLCLOSE ENGY_TEST_TIME_SCALE
  log "distcheck"
  make -C build-main -j"$jobs" distcheck DISTCHECK_CONFIGURE_FLAGS="--without-cuda --with-blst=$blst_dir" \
    >build-main/distcheck.log 2>&1 ||
    { tail -60 build-main/distcheck.log; echo "distcheck: 0 passed, 1 failed"; exit 1; }
  grep -E 'archives ready|^=+$' build-main/distcheck.log | head -3
  summary+=("distcheck: 1 passed, 0 failed")
  # The fuzz targets under libFuzzer (clang, coverage-guided, ASan/UBSan):
  # each for ENGY_FUZZ_SECONDS (5) from its seed corpus.
  log "libfuzzer: build the fuzz targets with clang, fuzz each ${ENGY_FUZZ_SECONDS:-5} s"
  mkdir -p build-fuzz
  (cd build-fuzz && ../configure -q CC=clang --enable-libfuzzer --enable-sanitizers --with-blst="$blst_dir")
  make -C build-fuzz -j"$jobs" fuzz FUZZ_SECONDS="${ENGY_FUZZ_SECONDS:-5}" \
    >build-fuzz/fuzz.log 2>&1 ||
    { tail -60 build-fuzz/fuzz.log; echo "libfuzzer: 0 passed, 1 failed"; exit 1; }
  fuzz_n=$(grep -c '^== fuzz/' build-fuzz/fuzz.log)
  fuzz_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' build-fuzz/fuzz.log |
    awk '{ s += $1 } END { print s + 0 }')
  summary+=("libfuzzer: $fuzz_n targets, $fuzz_runs inputs, 0 crashes")
fi
log "summary"
printf '%s\n' "${summary[@]}"
