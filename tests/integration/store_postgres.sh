#!/bin/sh
# SPDX-License-Identifier: MIT
# store-postgres on a real PostgreSQL server that this script starts (a
# throwaway cluster on a unix socket, tests/integration/pg_lib.sh): the
# store conformance cases and store-postgres's own (check_store_postgres),
# then engyctl admin on it: its commands, a second process seeing the
# first one's writes, and the password of a role that needs one taken
# from password_file, $ENGY_PG_PASSWORD, PGPASSWORD or PGPASSFILE and
# never printed.  Skips (77) when store-postgres is not built or no
# server binaries are installed.
# Oracle: check_store_postgres's hand-worked money (specs/store.md §2) and
# the database's constraints; engyctl admin output against amounts the
# script set.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/pg_lib.sh"

PLUG="$top_builddir/plugins/store-postgres/.libs"
CHECK="$top_builddir/tests/unit/check_store_postgres"
[ -f "$PLUG/store-postgres.so" ] && [ -x "$CHECK" ] ||
	pg_skip "store-postgres is not built (configure found no libpq, or --without-postgres)"
PW="pw-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
pg_start "local all engy_pw scram-sha-256"
ok "PostgreSQL started: $("$PG_BIN/pg_ctl" --version), socket in \$T/pg${PG_USER:+, server as $PG_USER}"

# --- the conformance cases and store-postgres's own ----------------------------
"$CHECK" > "$T/check.log" 2>&1 || fail "check_store_postgres: $(tail -40 "$T/check.log")"
grep -E "^[0-9]+%: Checks: " "$T/check.log" | sed 's/^/# /'
grep -E "store-postgres (reserve|key_hash|log_append|churn)" "$T/check.log" | sed 's/^/# /' || true
ok "check_store_postgres: every store conformance case and store-postgres's own pass"

# --- engyctl admin on store-postgres --------------------------------------------
export ENGY_PLUGIN_DIR="$PLUG" ENGY_STATE_DIR="$T"
export ENGY_KEY_PEPPER="store-postgres-pepper-0123456789ab"
A() { "$ENGYCTL" admin --store store-postgres -o conninfo="$ENGY_TEST_PG" -o schema=admin "$@"; }
ALICE=5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY
expect_ok "account created" "account id=1 name=acme balance=0.000000" A accounts create acme
expect_fail "duplicate account refused" "already exists" A accounts create acme
expect_ok "top-up in dollars" "balance=12.500000 reserved=0.000000" A topup acme 12.50
KEY=$(A keys create acme --label ci 2>"$T/err") || fail "keys create: $(cat "$T/err")"
case "$KEY" in sk-engy-*) ok "API key printed once";; *) fail "key: $KEY";; esac
expect_ok "key listed, text not kept" "label=\"ci\"" A keys list acme
MK=$(A miners register "$ALICE" --label a 2>"$T/err") || fail "miners register: $(cat "$T/err")"
case "$MK" in mk-engy-*) ok "miner key printed once";; *) fail "miner key: $MK";; esac
expect_ok "another process sees them" "$ALICE" A miners list
[ "$(pg_sql "SELECT balance_micro FROM admin.accounts WHERE name = 'acme'")" = 12500000 ] ||
	fail "balance in the database"
[ "$(pg_sql "SELECT COUNT(*) FROM admin.api_keys WHERE position('$KEY' in encode(hash, 'escape')) > 0 OR shown = '$KEY'")" = 0 ] ||
	fail "key text in the database"
ok "the database holds the balance as BIGINT micro-USD and no key text"
expect_ok "reservations released" "released" A reservations release-expired

# --- a role with a password: every way to give it, never printed ----------------
pg_sql "CREATE ROLE engy_pw LOGIN PASSWORD '$PW'; GRANT ALL ON DATABASE engytest TO engy_pw" >/dev/null ||
	fail "create role"
PWC="host=$PG_DIR dbname=engytest user=engy_pw"
P() { "$ENGYCTL" admin --store store-postgres -o conninfo="$PWC" -o schema=pw "$@"; }
expect_fail "no password: refused by the server" "could not open the store" P accounts list
printf '%s\n' "$PW" > "$T/pwfile"
chmod 600 "$T/pwfile"
# A refusal while the password is known (right password, no such
# database): its output does not hold the password.
out=$("$ENGYCTL" admin --store store-postgres -o conninfo="host=$PG_DIR dbname=engy_nosuch user=engy_pw" \
	-o schema=pw -o password_file="$T/pwfile" accounts list 2>&1) && fail "no such database: accepted: $out"
case "$out" in *"could not open the store"*) ;; *) fail "no such database: no refusal: $out";; esac
case "$out" in *"$PW"*) fail "password printed in a refusal: $out";; esac
ok "a refusal with the password in hand does not print it"
out=$(P -o password_file="$T/pwfile" accounts create viafile 2>&1) || fail "password_file: $out"
ok "password_file"
out=$(ENGY_PG_PASSWORD="$PW" P accounts list 2>&1) || fail "ENGY_PG_PASSWORD: $out"
case "$out" in *viafile*) ok "\$ENGY_PG_PASSWORD";; *) fail "ENGY_PG_PASSWORD: $out";; esac
out=$(PGPASSWORD="$PW" P accounts list 2>&1) || fail "PGPASSWORD: $out"
ok "libpq's PGPASSWORD"
printf '%s:*:*:engy_pw:%s\n' "$PG_DIR" "$PW" > "$T/pgpass"
chmod 600 "$T/pgpass"
out=$(PGPASSFILE="$T/pgpass" P -v accounts list 2>&1) || fail "PGPASSFILE: $out"
case "$out" in *"$PW"*) fail "password printed: $out";; esac
case "$out" in *"event=store_open host=$PG_DIR"*"user=engy_pw"*) ok "libpq's PGPASSFILE; the log names host, db and user only";;
	*) fail "PGPASSFILE: no store_open line: $out";; esac
echo "1..$N_OK"
