#!/usr/bin/env bash
# Runs a command against a private, throwaway PostgreSQL instance.
#
#   scripts/with-postgres.sh swift test --filter WeheStoreTests
#
# Installs Debian's `postgresql` package when initdb/pg_ctl are missing, creates a data directory under
# .build/pg-<random>, starts the server on a free loopback port (and a socket inside the data directory), creates
# the database `wehe_test`, exports WEHE_TEST_POSTGRES_URL, runs the command, and always stops the server and
# removes the data directory afterwards, whether the command succeeded or not. The command's exit status is kept.
# PostgreSQL refuses to run as root, so when run as root the server runs as the `postgres` system user (created
# if needed).
set -euo pipefail

if [ "$#" -eq 0 ]; then
    echo "usage: $0 <command> [arguments...]" >&2
    exit 64
fi

root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

find_pg_bin() {
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(readlink -f "$(command -v pg_ctl)")"
        return 0
    fi
    local dir
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
            echo "$dir"
            return 0
        fi
    done
    return 1
}

if ! pg_bin="$(find_pg_bin)"; then
    echo "with-postgres: installing PostgreSQL from Debian's packages" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
    pg_bin="$(find_pg_bin)" || { echo "with-postgres: initdb/pg_ctl not found after installing postgresql" >&2; exit 69; }
fi

run_as=()
if [ "$(id -u)" -eq 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
        useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
    fi
    run_as=(runuser -u postgres --)
fi

mkdir -p "$root_dir/.build"
data_dir="$root_dir/.build/pg-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
mkdir -p "$data_dir"
if [ "${#run_as[@]}" -gt 0 ]; then
    chown postgres "$data_dir"
    if ! "${run_as[@]}" test -w "$data_dir"; then
        # The build folder is not reachable for the postgres user: fall back to a private temporary directory.
        rmdir "$data_dir"
        data_dir="$(mktemp -d /tmp/wehe-pg-XXXXXX)"
        chown postgres "$data_dir"
    fi
fi
chmod 700 "$data_dir"

cleanup() {
    local status=$?
    if [ -f "$data_dir/cluster/postmaster.pid" ]; then
        "${run_as[@]}" "$pg_bin/pg_ctl" -D "$data_dir/cluster" -m fast -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$data_dir"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"

"${run_as[@]}" "$pg_bin/initdb" -D "$data_dir/cluster" -U wehe --auth=trust -E UTF8 --no-locale >"$data_dir/initdb.log" 2>&1 || {
    cat "$data_dir/initdb.log" >&2
    exit 70
}
"${run_as[@]}" "$pg_bin/pg_ctl" -D "$data_dir/cluster" -l "$data_dir/cluster/server.log" -w -t 60 \
    -o "-p $port -k $data_dir/cluster -c listen_addresses=127.0.0.1 -c max_connections=400" start >/dev/null || {
    cat "$data_dir/cluster/server.log" >&2 || true
    exit 70
}
"${run_as[@]}" "$pg_bin/psql" -h 127.0.0.1 -p "$port" -U wehe -d postgres -v ON_ERROR_STOP=1 -q \
    -c "CREATE DATABASE wehe_test" >/dev/null

export WEHE_TEST_POSTGRES_URL="postgres://wehe@127.0.0.1:$port/wehe_test?tlsmode=disable"
echo "with-postgres: PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data in $data_dir)" >&2

set +e
"$@"
status=$?
set -e
exit "$status"
