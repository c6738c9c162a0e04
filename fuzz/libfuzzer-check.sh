#!/bin/sh
# SPDX-License-Identifier: MIT
# The test runner of a libFuzzer build (configure --enable-libfuzzer): in
# `make check` a fuzz target replays its seed corpus once (-runs=0) instead
# of fuzzing until stopped; every other test runs as it is.
case "$1" in
*fuzz/fuzz_*)
	n=${1##*/fuzz_}
	exec "$1" -runs=0 "$top_srcdir/fuzz/corpus/$n" ;;
*)
	exec "$@" ;;
esac
