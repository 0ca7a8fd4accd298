#!/usr/bin/env bash
# Throw-away MariaDB server for tests and benchmarks.
#
#   scripts/mariadb.sh start DIR   # start a server that lives entirely under DIR
#   scripts/mariadb.sh stop DIR    # stop it (by PID) and wait until it has exited
#   scripts/mariadb.sh status DIR  # exit 0 when it answers
#
# `start` prints one line "host port socket pid" and writes DIR/server.env (KEY=VALUE lines, shell
# and Python friendly). Every instance has its own datadir, socket, pid file and a free loopback
# port, so several can run in parallel with different DIRs. `start` on a DIR whose server is still
# running only prints its line again.
#
# Logins: root (no password, over the socket or TCP 127.0.0.1) and repl/replpass (REPLICATION
# SLAVE, REPLICATION CLIENT, BINLOG MONITOR, SELECT ...), the account replicas and binlogscope's
# live driver use.
#
# Environment overrides: MARIADB_MAX_BINLOG_SIZE (default 16M), MARIADB_BUFFER_POOL (default 64M),
# MARIADB_START_TIMEOUT (seconds, default 60), MARIADBD (server binary), MARIADB_EXTRA_ARGS (more
# server options, space-separated, e.g. --ssl-cert=... --ssl-key=...), MARIADB_FIXED_PORT (this
# port instead of a free one: a restart where its clients expect it).
set -euo pipefail

usage() { echo "usage: $0 start|stop|status DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
cmd=$1
mkdir -p "$2"
DIR=$(cd "$2" && pwd)

MARIADBD=${MARIADBD:-$(command -v mariadbd || command -v mysqld || echo /usr/sbin/mariadbd)}
[[ -x $MARIADBD ]] || MARIADBD=/usr/sbin/mariadbd
INSTALL_DB=$(command -v mariadb-install-db || command -v mysql_install_db || true)
CLIENT=$(command -v mariadb || command -v mysql || true)
ADMIN=$(command -v mariadb-admin || command -v mysqladmin || true)
MAX_BINLOG_SIZE=${MARIADB_MAX_BINLOG_SIZE:-16M}
BUFFER_POOL=${MARIADB_BUFFER_POOL:-64M}
START_TIMEOUT=${MARIADB_START_TIMEOUT:-60}

DATADIR=$DIR/data
BINLOG_DIR=$DIR/binlog
PIDFILE=$DIR/mariadbd.pid
ERRLOG=$DIR/error.log
ENVFILE=$DIR/server.env

# unix socket paths are limited to 107 bytes: fall back to a short private dir under /tmp
socket_path() {
    local s=$DIR/mariadbd.sock
    if (( ${#s} > 100 )); then
        if [[ -f $DIR/.sockdir ]]; then
            s=$(cat "$DIR/.sockdir")/mariadbd.sock
        else
            local d
            d=$(mktemp -d /tmp/mdb.XXXXXX)
            echo "$d" > "$DIR/.sockdir"
            s=$d/mariadbd.sock
        fi
    fi
    echo "$s"
}

free_port() {
    python3 - <<'EOF'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
EOF
}

alive() {  # pid -> 0 while the process exists and is not a zombie (PID 1 may not reap it)
    [[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null || return 1
    local state
    state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || echo "?")
    [[ $state != Z && $state != X ]]
}

server_pid() {
    local pid=""
    [[ -f $PIDFILE ]] && pid=$(cat "$PIDFILE" 2>/dev/null || true)
    if [[ -z $pid && -f $ENVFILE ]]; then
        pid=$(sed -n 's/^MARIADB_PID=//p' "$ENVFILE")
    fi
    echo "$pid"
}

sql() {  # run SQL as root over the socket
    "$CLIENT" --no-defaults -uroot -S "$SOCK" --batch --skip-column-names -e "$1"
}

print_line() {
    # shellcheck disable=SC1090
    source "$ENVFILE"
    echo "$MARIADB_HOST $MARIADB_PORT $MARIADB_SOCKET $MARIADB_PID"
}

do_start() {
    [[ -n $INSTALL_DB && -n $CLIENT && -n $ADMIN ]] || {
        echo "mariadb.sh: mariadb-install-db / mariadb / mariadb-admin not found" \
             "(run scripts/install-deps.sh)" >&2
        exit 1
    }
    SOCK=$(socket_path)
    local pid
    pid=$(server_pid)
    if alive "$pid" && [[ -f $ENVFILE ]] && "$ADMIN" --no-defaults -uroot -S "$SOCK" ping \
            >/dev/null 2>&1; then
        print_line
        return 0
    fi
    mkdir -p "$BINLOG_DIR" "$DIR/tmp"
    if [[ ! -d $DATADIR/mysql ]]; then
        rm -rf "$DATADIR"
        if ! "$INSTALL_DB" --no-defaults --auth-root-authentication-method=normal \
                --datadir="$DATADIR" --user="$(id -un)" --skip-test-db --tmpdir="$DIR/tmp" \
                >"$DIR/install-db.log" 2>&1; then
            echo "mariadb.sh: mariadb-install-db failed:" >&2
            tail -20 "$DIR/install-db.log" >&2
            exit 1
        fi
    fi

    local port attempt ok=0
    for attempt in 1 2 3 4 5; do
        port=${MARIADB_FIXED_PORT:-$(free_port)}
        rm -f "$PIDFILE" "$SOCK"
        : > "$ERRLOG"
        "$MARIADBD" --no-defaults \
            --user="$(id -un)" \
            --datadir="$DATADIR" \
            --tmpdir="$DIR/tmp" \
            --socket="$SOCK" \
            --pid-file="$PIDFILE" \
            --log-error="$ERRLOG" \
            --port="$port" \
            --bind-address=127.0.0.1 \
            --skip-name-resolve \
            --server-id=1 \
            --log-bin="$BINLOG_DIR/mysql-bin" \
            --binlog-format=ROW \
            --binlog-checksum=CRC32 \
            --binlog-row-metadata=FULL \
            --binlog-row-image=FULL \
            --binlog-annotate-row-events=ON \
            --max-binlog-size="$MAX_BINLOG_SIZE" \
            --rpl-semi-sync-master-enabled=ON \
            --rpl-semi-sync-master-wait-no-slave=OFF \
            --rpl-semi-sync-master-timeout=2000 \
            --default-time-zone=+00:00 \
            --character-set-server=utf8mb4 \
            --collation-server=utf8mb4_general_ci \
            --innodb-buffer-pool-size="$BUFFER_POOL" \
            --innodb-log-file-size=64M \
            --innodb-flush-log-at-trx-commit=2 \
            --sync-binlog=0 \
            --max-allowed-packet=256M \
            --performance-schema=OFF \
            --expire-logs-days=0 \
            ${MARIADB_EXTRA_ARGS:-} \
            </dev/null >>"$ERRLOG" 2>&1 &
        pid=$!
        local waited=0
        while (( waited < START_TIMEOUT * 5 )); do
            if ! alive "$pid"; then break; fi
            if "$ADMIN" --no-defaults -uroot -S "$SOCK" ping >/dev/null 2>&1; then
                ok=1
                break
            fi
            sleep 0.2
            waited=$((waited + 1))
        done
        if (( ok )); then break; fi
        if alive "$pid"; then kill -9 "$pid" 2>/dev/null || true; fi
        wait "$pid" 2>/dev/null || true
        if grep -qiE 'bind on tcp/ip port|address already in use' "$ERRLOG"; then
            continue  # lost the race for the port: try another one
        fi
        break
    done
    if (( ! ok )); then
        echo "mariadb.sh: server did not start (see $ERRLOG):" >&2
        tail -30 "$ERRLOG" >&2
        exit 1
    fi

    # setup is kept out of the binlog: the first binlog file holds only what tests write
    sql "
        SET SESSION sql_log_bin = 0;
        CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
        GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
        CREATE USER IF NOT EXISTS 'repl'@'%' IDENTIFIED BY 'replpass';
        GRANT REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR, REPLICATION MASTER ADMIN,
              SELECT, RELOAD ON *.* TO 'repl'@'%';
        CREATE DATABASE IF NOT EXISTS binlogscope_test;
        FLUSH PRIVILEGES;" || {
        echo "mariadb.sh: creating users failed" >&2
        kill "$pid" 2>/dev/null || true
        exit 1
    }
    local version
    version=$(sql "SELECT VERSION()")
    cat > "$ENVFILE" <<EOF
MARIADB_HOST=127.0.0.1
MARIADB_PORT=$port
MARIADB_SOCKET=$SOCK
MARIADB_PID=$pid
MARIADB_USER=root
MARIADB_PASSWORD=
MARIADB_REPL_USER=repl
MARIADB_REPL_PASSWORD=replpass
MARIADB_DATABASE=binlogscope_test
MARIADB_DATADIR=$DATADIR
MARIADB_BINLOG_DIR=$BINLOG_DIR
MARIADB_BINLOG_BASENAME=mysql-bin
MARIADB_ERROR_LOG=$ERRLOG
MARIADB_VERSION=$version
EOF
    print_line
}

do_stop() {
    local pid
    pid=$(server_pid)
    if ! alive "$pid"; then
        rm -f "$PIDFILE"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    local waited=0
    while alive "$pid" && (( waited < 300 )); do  # 60 s
        sleep 0.2
        waited=$((waited + 1))
    done
    if alive "$pid"; then
        echo "mariadb.sh: server $pid did not stop in 60 s, killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
        sleep 0.5
    fi
    rm -f "$PIDFILE"
    if [[ -f $DIR/.sockdir ]]; then
        rm -rf "$(cat "$DIR/.sockdir")"
        rm -f "$DIR/.sockdir"
    fi
}

do_status() {
    SOCK=$(socket_path)
    local pid
    pid=$(server_pid)
    alive "$pid" && "$ADMIN" --no-defaults -uroot -S "$SOCK" ping >/dev/null 2>&1 && print_line
}

case $cmd in
    start) do_start ;;
    stop) do_stop ;;
    status) do_status ;;
    *) usage ;;
esac
