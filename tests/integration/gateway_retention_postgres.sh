#!/bin/sh
# SPDX-License-Identifier: MIT
# gateway_retention.sh with the gateway and engyctl admin on
# store-postgres (a throwaway server, tests/integration/pg_lib.sh): no
# prompt or completion text anywhere in the PostgreSQL data directory
# (tables, indexes, WAL) or the server's log, while the request log holds
# the metadata rows.  Skips (77) when store-postgres or the server
# binaries are missing.
# Oracle: grep over the PostgreSQL data directory and logs for a marker the
# test invents; independent of engy's code.
ENGY_TEST_STORE=store-postgres
. "$top_srcdir/tests/integration/gateway_retention.sh"
