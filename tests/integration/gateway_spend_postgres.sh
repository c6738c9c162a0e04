#!/bin/sh
# SPDX-License-Identifier: MIT
# gateway_spend.sh with the gateway and engyctl admin on store-postgres
# (a throwaway server, tests/integration/pg_lib.sh): the spend race through
# the gateway, exact settles and cancelled streams, the books to the
# micro-dollar.  Skips (77) when store-postgres or the server binaries are
# missing.
# Oracle: as gateway_spend.sh: money computed from the price card and the
# scripted miners' token counts.
ENGY_TEST_STORE=store-postgres
. "$top_srcdir/tests/integration/gateway_spend.sh"
