# tests/lib-pg.sh: a throwaway PostgreSQL cluster for a test, no network. Source it, then:
#   pg_cluster_start || { skip ...; exit 77; }   # sets PG_DIR, PG_HOST (the socket directory)
#   pg_createdb NAME                             # prints the database's URL
#   pg_server_stop; pg_server_start              # a restart of the server
#   pg_cluster_stop                              # also run by the EXIT trap, even on failure
# The cluster is made with initdb in a temporary directory as the unprivileged postgres user
# (PostgreSQL refuses to run as root), listens on a unix socket in that directory only
# (listen_addresses='', so no TCP port is taken), trusts local connections, and is stopped and
# removed by the test itself. Debian's packaged cluster ("main", port 5432, its socket in
# /var/run/postgresql) is never touched: it may run or not, this one has its own directory and
# socket, so the two cannot collide.
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PG_DIR=""
PG_HOST=""

# Run a PostgreSQL program as the postgres user (as is when we are not root).
pg_as() {
        if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Why there is no cluster to be had here (empty when there is one).
pg_missing() {
        [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ] || { echo "PostgreSQL 15 is not installed ($PG_BIN; scripts/install-deps.sh installs it)"; return; }
        if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then echo "no postgres user to run the cluster as"; return; fi
        if [ "$(id -u)" = 0 ] && ! command -v runuser >/dev/null; then echo "no runuser"; return; fi
}

pg_cluster_stop() {
        [ -n "$PG_DIR" ] || return 0
        if [ -f "$PG_DIR/data/postmaster.pid" ]; then
                pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w -t 30 stop >/dev/null 2>&1
        fi
        rm -rf "$PG_DIR"
        PG_DIR=""
}

# Make and start the cluster; 1 (with the reason on stderr) when it cannot be.
pg_cluster_start() {
        local why
        why=$(pg_missing)
        if [ -n "$why" ]; then echo "$why" >&2; return 1; fi
        PG_DIR=$(mktemp -d /tmp/hull-pg.XXXXXX) || return 1
        chmod 755 "$PG_DIR"
        [ "$(id -u)" = 0 ] && chown postgres: "$PG_DIR"
        PG_HOST=$PG_DIR
        # stopped at exit, after the test's own cleanup (tests/lib.sh's lib_cleanup) when it has one
        if declare -F lib_cleanup >/dev/null; then trap 'lib_cleanup; pg_cluster_stop' EXIT; else trap pg_cluster_stop EXIT; fi
        if ! pg_as "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres -E UTF8 --locale=C --auth=trust \
                        >"$PG_DIR/initdb.log" 2>&1; then
                echo "initdb failed: $(tail -3 "$PG_DIR/initdb.log")" >&2
                return 1
        fi
        pg_server_start
}

# Start (again) the cluster pg_cluster_start made; 1 with the reason on stderr.
pg_server_start() {
        # fsync stays on: the tests check that an event is durable before the call returns.
        if ! pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
                        -o "-c listen_addresses='' -c unix_socket_directories='$PG_DIR' -c port=5432 -c max_connections=50" \
                        start >/dev/null 2>&1; then
                echo "pg_ctl start failed: $(tail -3 "$PG_DIR/server.log" 2>/dev/null)" >&2
                return 1
        fi
}

# Stop the server (the cluster stays, to start again): what a PostgreSQL restart looks like.
pg_server_stop() {
        pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w -t 60 stop >/dev/null 2>&1
}

# pg_createdb NAME: a new empty database; prints its URL (postgresql:///NAME?host=DIR&user=postgres).
pg_createdb() {
        pg_as "$PG_BIN/createdb" -h "$PG_HOST" -U postgres "$1" || return 1
        printf 'postgresql:///%s?host=%s&user=postgres\n' "$1" "$PG_HOST"
}
