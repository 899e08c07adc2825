#!/usr/bin/env bash
# A throwaway N-node Elasticsearch cluster on loopback for the scale-out run and the ES scale
# bench (deploy/scaleout/README.md). It uses the distribution, the atlas-analysis plugin and the
# Temurin JDK that deploy/services/up.sh installed (run `make services` first), each node with a
# config directory of its own (ES_PATH_CONF) under $SCALEOUT_DIR: the shared test node (59200)
# and its files are never touched.
#
#   cluster.sh up [N]        fresh data, N nodes (default 3), waits for them, prints the env
#   cluster.sh kill I        SIGKILL node I          cluster.sh start I   start node I again
#   cluster.sh down          stop every node this script started (by their pid files)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=../services/lib.sh
source "$SCRIPT_DIR/../services/lib.sh"

SCALEOUT_DIR="${SCALEOUT_DIR:-/var/tmp/atlas-scaleout}"
SCALEOUT_HTTP_BASE="${SCALEOUT_HTTP_BASE:-29210}"
SCALEOUT_TRANSPORT_BASE="${SCALEOUT_TRANSPORT_BASE:-29310}"
# Below the ephemeral range (32768-60999 here): a port in it can be taken by any outgoing
# connection at the moment a node binds (a restarted node then fails to start).
SCALEOUT_HEAP="${SCALEOUT_HEAP:-384m}"
SCALEOUT_WAIT_SECONDS="${SCALEOUT_WAIT_SECONDS:-240}"
PASSWORD_FILE="$SCALEOUT_DIR/elastic-password"
PLATFORM_PASSWORD_FILE="$SCALEOUT_DIR/platform-password"
NODES_FILE="$SCALEOUT_DIR/nodes"

node_dir() { echo "$SCALEOUT_DIR/node-$1"; }
http_port() { echo $((SCALEOUT_HTTP_BASE + $1 - 1)); }
pidfile() { echo "$(node_dir "$1")/es.pid"; }
node_count() { cat "$NODES_FILE" 2>/dev/null || echo 0; }
node_alive() { pid_alive "$(pidfile "$1")" org.elasticsearch; }

# The svc user runs ES; SCALEOUT_DIR is its own (never under the shared services dir).
as_node() { (cd "$SCALEOUT_DIR" && runuser -u "$ATLAS_SVC_USER" -- "$@" 9>&-); }

configure_node() {
  local i=$1 n=$2 dir seeds="" masters="" j
  dir=$(node_dir "$i")
  for ((j = 1; j <= n; j++)); do
    seeds+="${seeds:+, }\"127.0.0.1:$((SCALEOUT_TRANSPORT_BASE + j - 1))\""
    masters+="${masters:+, }\"so-$j\""
  done
  rm -rf "$dir"
  mkdir -p "$dir/config/jvm.options.d" "$dir/data" "$dir/logs" "$dir/tmp" "$SCALEOUT_DIR/snapshots"
  local f
  for f in jvm.options log4j2.properties roles.yml role_mapping.yml users users_roles; do
    cp "$ES_HOME/config/$f" "$dir/config/$f"
  done
  cat >"$dir/config/elasticsearch.yml" <<YML
# Written by deploy/scaleout/cluster.sh for one run.
cluster.name: atlas-scaleout
node.name: so-$i
network.host: 127.0.0.1
http.port: $(http_port "$i")
transport.port: $((SCALEOUT_TRANSPORT_BASE + i - 1))
discovery.seed_hosts: [$seeds]
cluster.initial_master_nodes: [$masters]
path.data: $dir/data
path.logs: $dir/logs
path.repo: ["$SCALEOUT_DIR/snapshots"]
xpack.security.enabled: true
xpack.security.http.ssl.enabled: false
xpack.security.transport.ssl.enabled: false
xpack.security.authc.api_key.enabled: true
xpack.license.self_generated.type: trial
cluster.routing.allocation.disk.threshold_enabled: false
action.destructive_requires_name: false
YML
  printf -- '-Xms%s\n-Xmx%s\n' "$SCALEOUT_HEAP" "$SCALEOUT_HEAP" >"$dir/config/jvm.options.d/heap.options"
  chown -R "$ATLAS_SVC_USER:$ATLAS_SVC_USER" "$dir" "$SCALEOUT_DIR/snapshots"
  as_node env ES_JAVA_HOME="$ES_JAVA_HOME" ES_PATH_CONF="$dir/config" \
    "$ES_HOME/bin/elasticsearch-keystore" create >/dev/null
  as_node env ES_JAVA_HOME="$ES_JAVA_HOME" ES_PATH_CONF="$dir/config" \
    "$ES_HOME/bin/elasticsearch-keystore" add -x -f bootstrap.password <"$PASSWORD_FILE"
}

start_node() {
  local i=$1 dir
  dir=$(node_dir "$i")
  node_alive "$i" && { log "node so-$i already running"; return 0; }
  rm -f "$(pidfile "$i")"
  (ulimit -n 65535 2>/dev/null || true
   as_node env ES_JAVA_HOME="$ES_JAVA_HOME" ES_PATH_CONF="$dir/config" ES_TMPDIR="$dir/tmp" \
     "$ES_HOME/bin/elasticsearch" -d -p "$(pidfile "$i")") >"$dir/logs/startup.out" 2>&1 ||
    { tail -n 30 "$dir/logs/startup.out" >&2; die "node so-$i failed to start"; }
  log "node so-$i started (pid $(<"$(pidfile "$i")"), http :$(http_port "$i"))"
}

# A busy machine can keep a fresh cluster from answering for a while: retried, 60 s each.
admin_curl() {
  local i
  for ((i = 0; i < 5; i++)); do
    curl -fsS -m 60 -u "elastic:$(<"$PASSWORD_FILE")" -H 'Content-Type: application/json' "$@" &&
      return 0
    sleep 3
  done
  return 1
}

wait_nodes() {
  local n=$1 deadline=$((SECONDS + SCALEOUT_WAIT_SECONDS)) out
  until out=$(curl -fsS -m 30 -u "elastic:$(<"$PASSWORD_FILE")" "http://127.0.0.1:$(http_port 1)/_cluster/health?wait_for_nodes=$n&wait_for_status=yellow&timeout=5s" 2>/dev/null) &&
        [[ $out == *'"timed_out":false'* ]]; do
    ((SECONDS < deadline)) || { tail -n 40 "$(node_dir 1)/logs/atlas-scaleout.log" >&2 || true; die "cluster of $n not formed in ${SCALEOUT_WAIT_SECONDS}s"; }
    sleep 2
  done
  log "cluster formed: $out"
}

# The platform's least-privileged role and user, as up.sh makes them on the shared node.
platform_user() {
  local role user es="http://127.0.0.1:$(http_port 1)"
  (umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$PLATFORM_PASSWORD_FILE")
  role=$(sed 's/__PREFIX__/atlas/g' "$SCRIPT_DIR/../elasticsearch/platform-role.json")
  admin_curl -X PUT "$es/_security/role/atlas_platform" -d "$role" >/dev/null ||
    die "could not put the platform role"
  user=$(printf '{"password":"%s","roles":["atlas_platform"]}' "$(<"$PLATFORM_PASSWORD_FILE")")
  admin_curl -X PUT "$es/_security/user/atlas_platform" -d "$user" >/dev/null ||
    die "could not put the platform user"
}

# parallel FN [ARGS...]: FN I ARGS... for every node I at once; fails if any failed.
parallel() {
  local fn=$1 n i failed=0 pids=()
  shift
  n=$(node_count)
  for ((i = 1; i <= n; i++)); do "$fn" "$i" "$@" & pids+=($!); done
  for i in "${pids[@]}"; do wait "$i" || failed=1; done
  ((failed == 0)) || die "$fn failed on a node"
}

up() {
  local n=${1:-3} i
  require_root
  [[ -x $ES_HOME/bin/elasticsearch ]] || die "no ES at $ES_HOME: run make services first"
  ES_JAVA_HOME=$(java_home) || die "no Temurin JDK"
  down
  rm -rf "$SCALEOUT_DIR"
  mkdir -p "$SCALEOUT_DIR"
  (umask 077; od -An -N18 -tx1 /dev/urandom | tr -d ' \n' >"$PASSWORD_FILE")
  chown "$ATLAS_SVC_USER:$ATLAS_SVC_USER" "$SCALEOUT_DIR" "$PASSWORD_FILE"
  echo "$n" >"$NODES_FILE"
  # In parallel: each keystore command and each node start is a JVM boot (tens of seconds
  # on a busy 2-core machine), and a node's start waits for the others to form the cluster.
  parallel configure_node "$n"
  parallel start_node
  wait_nodes "$n"
  platform_user
  env_lines
}

env_lines() {
  local n i urls=""
  n=$(node_count)
  for ((i = 1; i <= n; i++)); do urls+="${urls:+,}http://127.0.0.1:$(http_port "$i")"; done
  echo "ATLAS_ES_URL=$urls"
  echo "ATLAS_ES_USERNAME=atlas_platform"
  echo "ATLAS_ES_PASSWORD=$(<"$PLATFORM_PASSWORD_FILE")"
  echo "ATLAS_ES_ADMIN_USERNAME=elastic"
  echo "ATLAS_ES_ADMIN_PASSWORD=$(<"$PASSWORD_FILE")"
}

down() {
  local i pid
  for i in "$SCALEOUT_DIR"/node-*; do
    [[ -d $i ]] || continue
    i=${i##*-}
    node_alive "$i" || continue
    pid=$(<"$(pidfile "$i")")
    kill -TERM "$pid" 2>/dev/null || true
    log "node so-$i: stopping pid $pid"
  done
  for i in "$SCALEOUT_DIR"/node-*; do
    [[ -d $i ]] || continue
    i=${i##*-}
    local k
    for ((k = 0; k < 60; k++)); do node_alive "$i" || break; sleep 1; done
    if node_alive "$i"; then kill -KILL "$(<"$(pidfile "$i")")" 2>/dev/null || true; fi
  done
}

kill_node() {
  local i=$1
  node_alive "$i" || die "node so-$i is not running"
  kill -KILL "$(<"$(pidfile "$i")")"
  log "node so-$i: SIGKILL"
}

start_again() {
  ES_JAVA_HOME=$(java_home) || die "no Temurin JDK"
  start_node "$1"
}

case "${1:-}" in
  up) up "${2:-3}" ;;
  env) env_lines ;;
  kill) kill_node "$2" ;;
  start) start_again "$2" ;;
  down) down; log "cluster stopped" ;;
  *) echo "usage: $0 up [N] | env | kill I | start I | down" >&2; exit 2 ;;
esac
