#!/usr/bin/env bash
# Start a throwaway PostgreSQL server for the tests and print its connection string.
#
#   WOPDSL_TEST_POSTGRES="$(.ci/postgres.sh)"; export WOPDSL_TEST_POSTGRES
#
# Installs Debian's `postgresql` package when no server binaries are found (CI runs as root
# on a clean machine), creates a cluster in $WOPDSL_PG_DIR (default: a folder under /tmp)
# owned by the `postgres` user when run as root, listening on 127.0.0.1:$WOPDSL_PG_PORT
# (default 54329) only, with a role `wop` (password auth, may create databases: each test
# gets its own) and a database `wop`. Running it again reuses a running cluster.
# `.ci/postgres.sh stop` stops it. Everything but the connection string goes to stderr.
#
# The cluster runs with fsync off: it holds test data only, and CREATE DATABASE per test
# stays fast. bench/run.py prints the server's durability settings next to its figures.
set -euo pipefail

DIR="${WOPDSL_PG_DIR:-${TMPDIR:-/tmp}/wopdsl-postgres}"
PORT="${WOPDSL_PG_PORT:-54329}"
ROLE=wop
DB=wop
# A test-only password, generated once per cluster and kept beside it (mode 600).
PWFILE="$DIR.password"

say() { echo "postgres.sh: $*" >&2; }

find_bin() {
    local found
    found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    if [[ -n "$found" && -x "$found/initdb" ]]; then
        echo "$found"
    elif command -v initdb >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
    fi
}

BIN="$(find_bin)"
if [[ -z "$BIN" ]]; then
    if [[ "$(id -u)" != 0 ]]; then
        say "PostgreSQL is not installed; run as root to install it (apt-get install postgresql)"
        exit 1
    fi
    say "installing Debian's postgresql package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
    BIN="$(find_bin)"
fi

# As root, the server runs as the `postgres` user (it refuses to run as root).
if [[ "$(id -u)" == 0 ]]; then
    OWNER=postgres
    id "$OWNER" >/dev/null 2>&1 || useradd --system --home-dir "$DIR" "$OWNER"
    as_owner() { runuser -u "$OWNER" -- "$@"; }
else
    OWNER="$(id -un)"
    as_owner() { "$@"; }
fi

pg_ctl() { as_owner "$BIN/pg_ctl" -D "$DIR" "$@"; }

if [[ "${1:-}" == stop ]]; then
    if [[ -f "$DIR/postmaster.pid" ]]; then
        pg_ctl stop -m fast >&2
    fi
    exit 0
fi

if [[ ! -f "$DIR/PG_VERSION" ]]; then
    say "creating a cluster in $DIR"
    mkdir -p "$DIR"
    chown "$OWNER" "$DIR"
    chmod 700 "$DIR"
    umask 077
    python3 -c 'import secrets; print(secrets.token_urlsafe(18))' > "$PWFILE"
    # Local (socket) connections of the cluster's owner are trusted, so this script can
    # create the role; TCP needs the role's password (scram-sha-256), as a real server would.
    as_owner "$BIN/initdb" -D "$DIR" -U postgres --auth-local=trust \
        --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
    cat >> "$DIR/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$DIR'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
fi

if ! pg_ctl status >/dev/null 2>&1; then
    say "starting the server on 127.0.0.1:$PORT"
    pg_ctl start -w -t 60 -l "$DIR/server.log" >&2
fi

psql_admin() { as_owner "$BIN/psql" -h "$DIR" -p "$PORT" -U postgres -d postgres -qtA "$@"; }
PASSWORD="$(cat "$PWFILE")"
if [[ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'")" != 1 ]]; then
    psql_admin -c "CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD'" >&2
fi
if [[ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]]; then
    psql_admin -c "CREATE DATABASE $DB OWNER $ROLE" >&2
fi

echo "postgresql://$ROLE:$PASSWORD@127.0.0.1:$PORT/$DB"
