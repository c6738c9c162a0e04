# A throwaway PostgreSQL server for the store-postgres tests (sourced
# after lib.sh): pg_start finds initdb and pg_ctl (PATH, then
# /usr/lib/postgresql/*/bin), makes a cluster under $T/pg that listens
# on a unix socket in that directory only (no TCP port), starts it, and
# exports ENGY_TEST_PG (a conninfo for database engytest, user engy) and
# ENGY_TEST_PG_DATA; the EXIT trap stops it.  PostgreSQL refuses to run
# as root: as root the server runs as the postgres user (else nobody).
# Anything missing is a skip (77) that says what (lib.sh's skip_or_fail:
# a failure under ENGY_REQUIRE_PEERS=1).  PG_SERVER_OPTS replaces
# the server's settings (default: -F, no fsync, 16 MB of shared buffers).
pg_skip() { skip_or_fail "$*"; }

pg_find() {
	PG_BIN=""
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		PG_BIN=$(dirname "$(command -v initdb)")
	else
		for d in /usr/lib/postgresql/*/bin; do
			[ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && PG_BIN=$d
		done
	fi
	[ -n "$PG_BIN" ] || pg_skip "no PostgreSQL server (initdb, pg_ctl) in PATH or /usr/lib/postgresql/*/bin; apt-get install postgresql"
	PG_CLIENT=$PG_BIN
	[ -x "$PG_CLIENT/createdb" ] || PG_CLIENT=$(dirname "$(command -v createdb 2>/dev/null || echo /x/createdb)")
	[ -x "$PG_CLIENT/createdb" ] || pg_skip "no createdb next to $PG_BIN/initdb or in PATH"
}

# pg_as CMD...: run as the server's user.
pg_as() {
	if [ -z "$PG_USER" ]; then
		"$@"
	elif command -v runuser >/dev/null 2>&1; then
		runuser -u "$PG_USER" -- "$@"
	else
		setpriv --reuid="$(id -u "$PG_USER")" --regid="$(id -g "$PG_USER")" \
			--clear-groups -- "$@"
	fi
}

pg_stop() {
	[ -n "${PG_DATA:-}" ] && [ -f "$PG_DATA/postmaster.pid" ] || return 0
	pg_as "$PG_BIN/pg_ctl" -D "$PG_DATA" -m immediate -w stop >/dev/null 2>&1 ||
		kill -9 "$(head -1 "$PG_DATA/postmaster.pid")" 2>/dev/null || true
}

# pg_start [HBA-LINES]: extra pg_hba.conf lines go before "trust everyone".
pg_start() {
	pg_find
	PG_USER=""
	if [ "$(id -u)" = 0 ]; then
		for u in postgres nobody; do
			id "$u" >/dev/null 2>&1 && { PG_USER=$u; break; }
		done
		[ -n "$PG_USER" ] || pg_skip "running as root and no postgres or nobody user to run the server as"
		command -v runuser >/dev/null 2>&1 || command -v setpriv >/dev/null 2>&1 ||
			pg_skip "running as root without runuser or setpriv to drop to $PG_USER"
	fi
	PG_DIR="$T/pg"
	PG_DATA="$PG_DIR/data"
	mkdir -p "$PG_DIR"
	chmod 755 "$T"
	[ -z "$PG_USER" ] || chown "$PG_USER" "$PG_DIR"
	trap 'pg_stop; cleanup' EXIT
	pg_as "$PG_BIN/initdb" -D "$PG_DATA" -A trust -U engy -E UTF8 --locale=C \
		--no-sync > "$PG_DIR/initdb.log" 2>&1 ||
		fail "initdb: $(tail -5 "$PG_DIR/initdb.log")"
	if [ -n "${1:-}" ]; then
		{ printf '%s\n' "$1"; cat "$PG_DATA/pg_hba.conf"; } > "$PG_DIR/hba"
		cat "$PG_DIR/hba" > "$PG_DATA/pg_hba.conf"
	fi
	pg_as "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_DIR/server.log" -w -t 60 \
		-o "-k $PG_DIR -c listen_addresses='' ${PG_SERVER_OPTS:--F -c shared_buffers=16MB}" \
		start > "$PG_DIR/pg_ctl.log" 2>&1 ||
		fail "pg_ctl start: $(cat "$PG_DIR/pg_ctl.log"; tail -5 "$PG_DIR/server.log")"
	"$PG_CLIENT/createdb" -h "$PG_DIR" -U engy engytest ||
		fail "createdb engytest"
	ENGY_TEST_PG="host=$PG_DIR dbname=engytest user=engy"
	ENGY_TEST_PG_DATA=$PG_DATA
	export ENGY_TEST_PG ENGY_TEST_PG_DATA
}

# pg_sql SQL: run one statement as engy on engytest.
pg_sql() {
	"$PG_CLIENT/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$PG_DIR" -U engy \
		-d engytest -c "$1"
}
