#!/bin/sh
# SPDX-License-Identifier: MIT
# gateway_lease.sh with the gateway and engyctl admin on store-postgres
# (a throwaway server, tests/integration/pg_lib.sh): leases kept open and
# charged in group-committed batches by store-postgres's settle_batch(),
# closed at SIGTERM, lapsed after kill -9; the books to the micro-dollar.
# Skips (77) when store-postgres or the server binaries are missing.
# Oracle: as gateway_lease.sh: money computed from the price card and the
# scripted miners' token counts.
ENGY_TEST_STORE=store-postgres
. "$top_srcdir/tests/integration/gateway_lease.sh"
