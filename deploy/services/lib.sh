# shellcheck shell=bash disable=SC2034
# Shared settings and helpers for up.sh / down.sh. Sourced, not executed.

ATLAS_SERVICES_DIR="${ATLAS_SERVICES_DIR:-/var/tmp/atlas-services}"
ATLAS_SVC_USER="${ATLAS_SVC_USER:-atlas-svc}"

ES_VERSION="${ES_VERSION:-9.5.4}"
ATLAS_ES_PORT="${ATLAS_ES_PORT:-59200}"
ATLAS_ES_TRANSPORT_PORT="${ATLAS_ES_TRANSPORT_PORT:-59300}"
ATLAS_PG_PORT="${ATLAS_PG_PORT:-55432}"
ATLAS_REDIS_PORT="${ATLAS_REDIS_PORT:-56379}"

ES_HOME="$ATLAS_SERVICES_DIR/elasticsearch-$ES_VERSION"
ES_PIDFILE="$ATLAS_SERVICES_DIR/run/es.pid"
ES_DATA="$ATLAS_SERVICES_DIR/es-data"
ES_LOGS="$ATLAS_SERVICES_DIR/es-logs"
ES_TMP="$ATLAS_SERVICES_DIR/es-tmp"
# The snapshot repositories' root (path.repo): manage.py atlas_backup's ES snapshots.
ES_SNAPSHOTS="$ATLAS_SERVICES_DIR/es-snapshots"
ES_PASSWORD_FILE="$ATLAS_SERVICES_DIR/elastic-password"
PG_DATA="$ATLAS_SERVICES_DIR/pg-data"
PG_SOCKET_DIR="$ATLAS_SERVICES_DIR/pg-socket"
PG_LOG="$ATLAS_SERVICES_DIR/pg-logs/postgresql.log"
REDIS_DIR="$ATLAS_SERVICES_DIR/redis"
REDIS_CONF="$REDIS_DIR/redis.conf"
REDIS_PIDFILE="$REDIS_DIR/redis.pid"

log() { printf '[atlas-services] %s\n' "$*"; }
die() { printf '[atlas-services] ERROR: %s\n' "$*" >&2; exit 1; }

require_root() {
  [[ $EUID -eq 0 ]] || die "run as root (needs useradd/apt-get/runuser)"
}

# Run a command as the service user from a directory it can enter
# (the caller's cwd may be under /root, which pg_ctl and the JVM dislike).
as_svc() {
  # 9>&-: daemons must not inherit up.sh's lock fd (it would keep the lock).
  (cd "$ATLAS_SERVICES_DIR" && runuser -u "$ATLAS_SVC_USER" -- "$@" 9>&-)
}

# Run "$2..." as a named, timed step.
step() {
  local name=$1; shift
  local t0=${EPOCHREALTIME/./}
  log "==> $name"
  "$@"
  local dt=$(( ${EPOCHREALTIME/./} - t0 ))
  log "<== $name: $(( dt / 1000000 )).$(( (dt / 100000) % 10 ))s"
}

# True if the pid in file $1 is alive and its command line contains $2.
pid_alive() {
  local pidfile=$1 pattern=$2 pid
  [[ -s $pidfile ]] || return 1
  pid=$(<"$pidfile")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [[ -r /proc/$pid/cmdline ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$pattern"
}

java_home() {
  local d
  if [[ -n ${ATLAS_ES_JAVA_HOME:-} ]]; then
    echo "$ATLAS_ES_JAVA_HOME"; return 0
  fi
  for d in /usr/lib/jvm/temurin-25*; do
    if [[ -x $d/bin/java ]]; then echo "$d"; return 0; fi
  done
  return 1
}

# Postgres bin dir: the version that created the data dir if there is one,
# otherwise the newest installed.
pg_bin() {
  local v d
  if [[ -s $PG_DATA/PG_VERSION ]]; then
    v=$(<"$PG_DATA/PG_VERSION")
    if [[ -x /usr/lib/postgresql/$v/bin/initdb ]]; then
      echo "/usr/lib/postgresql/$v/bin"; return 0
    fi
  fi
  d=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  [[ -n $d && -x $d/initdb ]] || return 1
  echo "$d"
}

es_running() { pid_alive "$ES_PIDFILE" org.elasticsearch; }

es_stop() {
  if ! es_running; then
    rm -f "$ES_PIDFILE"
    log "elasticsearch: not running"
    return 0
  fi
  local pid i
  pid=$(<"$ES_PIDFILE")
  log "elasticsearch: stopping pid $pid"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 60; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "elasticsearch: still alive after 60s, sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 1
  fi
  rm -f "$ES_PIDFILE"
  log "elasticsearch: stopped"
}

pg_running() {
  local bin
  [[ -s $PG_DATA/PG_VERSION ]] || return 1
  bin=$(pg_bin) || return 1
  as_svc "$bin/pg_ctl" status -D "$PG_DATA" >/dev/null 2>&1
}

pg_stop() {
  if ! pg_running; then
    log "postgresql: not running"
    return 0
  fi
  as_svc "$(pg_bin)/pg_ctl" stop -D "$PG_DATA" -m fast -w -t 60
  log "postgresql: stopped"
}

redis_conf_port() {
  [[ -r $REDIS_CONF ]] && awk '$1 == "port" { print $2; exit }' "$REDIS_CONF"
}

redis_stop() {
  local port pid i
  port=$(redis_conf_port || true)
  port=${port:-$ATLAS_REDIS_PORT}
  if command -v redis-cli >/dev/null &&
     [[ $(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]]; then
    redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 || true
  elif pid_alive "$REDIS_PIDFILE" redis-server; then
    kill -TERM "$(<"$REDIS_PIDFILE")" 2>/dev/null || true
  else
    log "redis: not running"
    return 0
  fi
  # wait for the process to go away
  for ((i = 0; i < 50; i++)); do
    pid_alive "$REDIS_PIDFILE" redis-server || break
    sleep 0.2
  done
  log "redis: stopped"
}

# The atlas-analysis plugin's source hash: file contents and paths relative to the source
# folder only, so every checkout of one commit (a worktree, a second clone, CI's fresh clone)
# hashes the same and none rebuilds the plugin and restarts the node another one is using.
plugin_source_hash() {
  (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) |
    sha256sum | cut -d' ' -f1
}

# The stamp earlier up.sh versions wrote (absolute paths in it: one value per checkout).
legacy_plugin_source_hash() {
  find "$1" -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
}

# plugin_up_to_date SRC PLUGIN_DIR ES_VERSION: true when the installed plugin was built from
# SRC's content for ES_VERSION. A stamp in the legacy form from this same checkout is
# rewritten in the new form (same source, nothing to rebuild).
plugin_up_to_date() {
  local src=$1 dir=$2 version=$3 want have
  [[ -f $dir/atlas-analysis.jar ]] || return 1
  want="$(plugin_source_hash "$src") $version"
  have="$(cat "$dir/source.sha256" 2>/dev/null)"
  if [[ $have != "$want" && $have == "$(legacy_plugin_source_hash "$src") $version" ]]; then
    echo "$want" >"$dir/source.sha256"
    have=$want
  fi
  [[ $have == "$want" ]]
}
