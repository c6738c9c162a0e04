#!/bin/sh
# SPDX-License-Identifier: MIT
# Stands in for the commit-reveal tests when configure did not find blst:
# a skip that says why, a failure under the test command in CI (which
# builds blst itself: scripts/build-blst.sh).
. "$top_srcdir/tests/integration/lib.sh"
skip_or_fail "blst not found by configure: commit-reveal (lib/drand) is not built (scripts/build-blst.sh DIR, then --with-blst=DIR)"
