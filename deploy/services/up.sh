#!/usr/bin/env bash
# Bring up Elasticsearch, PostgreSQL and Redis for Atlas tests / local platform,
# idempotently, and write connection settings to <repo>/.services/env.
# See deploy/services/README.md.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"
REPO_ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$SCRIPT_DIR/lib.sh"

ENV_DIR="$REPO_ROOT/.services"
ENV_FILE="$ENV_DIR/env"
ES_ZIP_URL="https://repo1.maven.org/maven2/org/elasticsearch/distribution/integ-test-zip/elasticsearch/$ES_VERSION/elasticsearch-$ES_VERSION.zip"
ES_ZIP="$ATLAS_SERVICES_DIR/cache/elasticsearch-$ES_VERSION.zip"
ES_WAIT_SECONDS="${ES_WAIT_SECONDS:-180}"
PLUGIN_SRC="$REPO_ROOT/deploy/elasticsearch/atlas-analysis"
PLUGIN_DIR="$ES_HOME/plugins/atlas-analysis"
ES_RESTART=0   # set to 1 when config/plugins changed under a running node

# ---------------------------------------------------------------- helpers --

# Write stdin to $1 only if the content differs. Returns 0 if it changed.
write_if_changed() {
  local dest=$1 tmp
  tmp=$(mktemp "$dest.XXXXXX")
  cat >"$tmp"
  if [[ -f $dest ]] && cmp -s "$tmp" "$dest"; then
    rm -f "$tmp"
    return 1
  fi
  mv -f "$tmp" "$dest"
  return 0
}

# chown -R to the service user, but only walk the tree if the top is wrong.
ensure_owned() {
  local d
  for d in "$@"; do
    mkdir -p "$d"
    if [[ $(stat -c %U "$d") != "$ATLAS_SVC_USER" ]]; then
      chown -R "$ATLAS_SVC_USER:$ATLAS_SVC_USER" "$d"
    fi
  done
}

# apt-get install without letting maintainer scripts start the default
# services (postgres on 5432 / redis on 6379). They would not conflict with
# our ports anyway; this just keeps the machine quiet.
apt_install() {
  local created_policy=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    created_policy=1
  fi
  local rc=0
  {
    DEBIAN_FRONTEND=noninteractive apt-get update -q &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@"
  } || rc=$?
  if [[ $created_policy == 1 ]]; then rm -f /usr/sbin/policy-rc.d; fi
  [[ $rc == 0 ]] || die "apt-get install $* failed (rc=$rc)"
}

# ------------------------------------------------------------------ steps --

prepare() {
  require_root
  local missing=() tool
  for tool in curl unzip; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  if ((${#missing[@]})); then apt_install "${missing[@]}"; fi
  for tool in curl unzip runuser flock; do
    command -v "$tool" >/dev/null || die "missing required tool: $tool"
  done
  if ! id -u "$ATLAS_SVC_USER" >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home \
      --home-dir "$ATLAS_SERVICES_DIR" --shell /usr/sbin/nologin "$ATLAS_SVC_USER"
    log "created system user $ATLAS_SVC_USER"
  fi
  mkdir -p "$ATLAS_SERVICES_DIR/cache"
  chmod 755 "$ATLAS_SERVICES_DIR"
  # Only one up.sh at a time.
  exec 9>"$ATLAS_SERVICES_DIR/.up.lock"
  flock -w 300 9 || die "another up.sh holds $ATLAS_SERVICES_DIR/.up.lock"
  log "services dir: $ATLAS_SERVICES_DIR (user $ATLAS_SVC_USER)"
}

es_download() {
  if [[ -d $ES_HOME/bin && -x $ES_HOME/bin/elasticsearch ]]; then
    log "elasticsearch $ES_VERSION already unpacked at $ES_HOME"
    return 0
  fi
  if [[ ! -s $ES_ZIP ]]; then
    log "downloading $ES_ZIP_URL"
    curl -fsSL --retry 5 --retry-delay 3 --retry-all-errors --connect-timeout 20 \
      -o "$ES_ZIP.part" "$ES_ZIP_URL"
    es_verify_checksum "$ES_ZIP.part"
    mv -f "$ES_ZIP.part" "$ES_ZIP"
  fi
  log "zip: $(stat -c %s "$ES_ZIP") bytes"
  local tmp="$ATLAS_SERVICES_DIR/.unzip.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  unzip -q "$ES_ZIP" -d "$tmp" || { rm -rf "$tmp" "$ES_ZIP"; die "corrupt zip (removed, re-run)"; }
  [[ -x $tmp/elasticsearch-$ES_VERSION/bin/elasticsearch ]] ||
    die "unexpected zip layout: $(ls "$tmp")"
  rm -rf "$ES_HOME"
  mv "$tmp/elasticsearch-$ES_VERSION" "$ES_HOME"
  rm -rf "$tmp"
  chown -R "$ATLAS_SVC_USER:$ATLAS_SVC_USER" "$ES_HOME"
  log "unpacked to $ES_HOME"
}

# Maven Central normally has .sha1/.sha512 next to each artifact. For the
# integ-test-zip 9.5.4 none exists (checked: .sha1/.sha256/.sha512/.md5/.asc all
# 404), so the zip is then only checked by curl -f and unzip's CRC checks
# (a corrupt zip is deleted so the next run downloads it again).
es_verify_checksum() {
  local file=$1 ext tool sum expected
  for ext in sha512 sha1; do
    if expected=$(curl -fsSL --retry 3 "$ES_ZIP_URL.$ext" 2>/dev/null); then
      expected=${expected%% *}
      tool=${ext}sum
      sum=$("$tool" "$file" | cut -d' ' -f1)
      [[ $sum == "$expected" ]] || { rm -f "$file"; die "$ext mismatch for $ES_ZIP_URL"; }
      log "verified $ext checksum"
      return 0
    fi
  done
  log "WARNING: no .sha512/.sha1 published next to the zip; relying on unzip's CRC checks"
}

find_java() {
  ES_JAVA_HOME=$(java_home) ||
    die "no Temurin 25 JDK found at /usr/lib/jvm/temurin-25* (set ATLAS_ES_JAVA_HOME)"
}

# The integ-test-zip has no analysis-common module, yet the security index
# (.security-7) needs uax_url_email / pattern_capture / unique; without them
# creating API keys, users or roles fails with
# "Unknown filter type [pattern_capture] for [email]". Build Atlas's small
# analysis plugin (deploy/elasticsearch/atlas-analysis: those three plus the
# English stemming filters the memory indices use) from Lucene classes already
# in lib/, and install it; rebuilt only when its source or ES changes.
es_install_analysis_plugin() {
  find_java
  if [[ -d $ES_HOME/modules/analysis-common ]]; then
    log "analysis-common module present; atlas-analysis plugin not needed"
    rm -rf "$PLUGIN_DIR"
    return 0
  fi
  local want
  want="$(plugin_source_hash "$PLUGIN_SRC") $ES_VERSION"
  if plugin_up_to_date "$PLUGIN_SRC" "$PLUGIN_DIR" "$ES_VERSION"; then
    log "atlas-analysis plugin up to date"
    return 0
  fi
  local tmp="$ATLAS_SERVICES_DIR/.plugin.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp/plugin"
  bash "$PLUGIN_SRC/build.sh" "$ES_HOME" "$ES_JAVA_HOME" "$tmp/atlas-analysis.zip" ||
    { rm -rf "$tmp"; die "building the atlas-analysis plugin failed"; }
  unzip -q "$tmp/atlas-analysis.zip" -d "$tmp/plugin"
  echo "$want" >"$tmp/plugin/source.sha256"
  rm -rf "$PLUGIN_DIR" "$ES_HOME/plugins/atlas-analysis-shim"
  mkdir -p "$ES_HOME/plugins"
  mv "$tmp/plugin" "$PLUGIN_DIR"
  rm -rf "$tmp"
  chown -R "$ATLAS_SVC_USER:$ATLAS_SVC_USER" "$PLUGIN_DIR"
  ES_RESTART=1
  log "installed atlas-analysis plugin -> $PLUGIN_DIR"
}

es_configure() {
  local changed=$ES_RESTART
  find_java
  ensure_owned "$ES_DATA" "$ES_LOGS" "$ES_TMP" "$ES_SNAPSHOTS"
  # Often not permitted in containers; with single-node discovery on loopback
  # the bootstrap checks are warnings only.
  if [[ $(cat /proc/sys/vm/max_map_count 2>/dev/null || echo 0) -lt 262144 ]]; then
    sysctl -q -w vm.max_map_count=262144 >/dev/null 2>&1 ||
      log "note: could not raise vm.max_map_count (ignored)"
  fi

  # All settings below are accepted by the 9.5.4 integ-test-zip (it ships
  # x-pack core + security, so trial licence, API keys and DLS work).
  if write_if_changed "$ES_HOME/config/elasticsearch.yml" <<EOF
# Managed by deploy/services/up.sh - edits are overwritten.
cluster.name: atlas-test
node.name: atlas-1
discovery.type: single-node
network.host: 127.0.0.1
http.port: $ATLAS_ES_PORT
transport.port: $ATLAS_ES_TRANSPORT_PORT
path.data: $ES_DATA
path.logs: $ES_LOGS
path.repo: ["$ES_SNAPSHOTS"]
xpack.security.enabled: true
xpack.security.http.ssl.enabled: false
xpack.security.transport.ssl.enabled: false
xpack.security.authc.api_key.enabled: true
xpack.license.self_generated.type: trial
cluster.routing.allocation.disk.threshold_enabled: false
action.destructive_requires_name: false
EOF
  then changed=1; fi
  mkdir -p "$ES_HOME/config/jvm.options.d"
  if write_if_changed "$ES_HOME/config/jvm.options.d/heap.options" <<EOF
-Xms512m
-Xmx512m
EOF
  then changed=1; fi
  chown -R "$ATLAS_SVC_USER:$ATLAS_SVC_USER" "$ES_HOME/config"

  # Bootstrap password for "elastic": generated once, kept outside the repo.
  if [[ ! -s $ES_PASSWORD_FILE ]]; then
    (umask 077; od -An -N18 -tx1 /dev/urandom | tr -d ' \n' >"$ES_PASSWORD_FILE")
    log "generated elastic password -> $ES_PASSWORD_FILE"
  fi
  chmod 600 "$ES_PASSWORD_FILE"
  ES_PASSWORD=$(<"$ES_PASSWORD_FILE")

  if [[ ! -f $ES_HOME/config/elasticsearch.keystore ]]; then
    as_svc env ES_JAVA_HOME="$ES_JAVA_HOME" "$ES_HOME/bin/elasticsearch-keystore" create >/dev/null
    echo "$ES_PASSWORD" | as_svc env ES_JAVA_HOME="$ES_JAVA_HOME" \
      "$ES_HOME/bin/elasticsearch-keystore" add -x -f bootstrap.password
    log "keystore created with bootstrap.password"
    changed=1
  fi

  if [[ $changed == 1 ]] && es_running; then
    log "elasticsearch config changed while running: restarting"
    es_stop
  fi
}

es_health() {
  curl -fsS -m 10 -u "elastic:$ES_PASSWORD" \
    "http://127.0.0.1:$ATLAS_ES_PORT/_cluster/health?wait_for_status=yellow&timeout=${1:-5s}" 2>/dev/null
}

es_log_tail() {
  local f="$ES_LOGS/atlas-test.log"
  log "---- tail of $f ----"
  tail -n 60 "$f" 2>/dev/null || log "(no log file)"
}

es_start() {
  if es_running && es_health 1s >/dev/null; then
    log "elasticsearch already up on :$ATLAS_ES_PORT (pid $(<"$ES_PIDFILE"))"
    return 0
  fi
  if ! es_running; then
    ensure_owned "$(dirname "$ES_PIDFILE")"
    rm -f "$ES_PIDFILE"
    log "starting elasticsearch $ES_VERSION (java: $ES_JAVA_HOME)"
    # Raise the fd limit (bootstrap check wants 65535; only a warning here).
    # Console output of the daemonizing launcher goes to es-logs/startup.out.
    if ! (ulimit -n 65535 2>/dev/null || true
          as_svc env ES_JAVA_HOME="$ES_JAVA_HOME" ES_TMPDIR="$ES_TMP" \
            "$ES_HOME/bin/elasticsearch" -d -p "$ES_PIDFILE") \
          >"$ES_LOGS/startup.out" 2>&1; then
      tail -n 40 "$ES_LOGS/startup.out" >&2 || true
      es_log_tail
      die "elasticsearch failed to start (see $ES_LOGS/startup.out)"
    fi
  fi
  local deadline=$((SECONDS + ES_WAIT_SECONDS)) out
  until out=$(es_health 5s); do
    if ! es_running; then
      es_log_tail
      die "elasticsearch process exited during startup"
    fi
    if ((SECONDS >= deadline)); then
      es_log_tail
      die "elasticsearch not healthy after ${ES_WAIT_SECONDS}s (auth failure? a stale es-data with another password needs: down.sh; rm -rf $ES_DATA)"
    fi
    sleep 2
  done
  log "elasticsearch health: $out"
}

es_check_license() {
  local lic="" flat i
  # Right after the first start the self-generated licence can take a few
  # seconds to appear (GET /_license answers 404 until then).
  for ((i = 0; i < 60; i++)); do
    lic=$(curl -fsS -m 10 -u "elastic:$ES_PASSWORD" "http://127.0.0.1:$ATLAS_ES_PORT/_license" 2>/dev/null) && break
    lic=""
    sleep 1
  done
  [[ -n $lic ]] || die "GET /_license kept failing for 60s"
  flat=$(tr -d ' \n' <<<"$lic")
  local type status
  type=$(grep -o '"type":"[a-z]*"' <<<"$flat" | head -n 1 | cut -d'"' -f4)
  status=$(grep -o '"status":"[a-z]*"' <<<"$flat" | head -n 1 | cut -d'"' -f4)
  log "licence: type=$type status=$status"
  [[ $type == trial && $status == active ]] ||
    die "expected an active trial licence, got: $lic"
}

# ------------------------------------------------ platform role (issue 17) --
# The platform and the test suite run as a least-privileged native user, never as
# "elastic": role atlas_platform from deploy/elasticsearch/platform-role.json over the
# indices atlas-* (every prefix the tests, the eval and the bench use), user
# atlas_platform with a password generated once. "elastic" stays in the env file as
# ATLAS_ES_ADMIN_* for the few things that administer security (manage.py es_platform_role).
PLATFORM_ROLE_FILE="$REPO_ROOT/deploy/elasticsearch/platform-role.json"
PLATFORM_USER=atlas_platform
PLATFORM_PASSWORD_FILE="$ATLAS_SERVICES_DIR/platform-password"

es_platform_role() {
  if [[ ! -s $PLATFORM_PASSWORD_FILE ]]; then
    (umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$PLATFORM_PASSWORD_FILE")
    log "generated $PLATFORM_USER password -> $PLATFORM_PASSWORD_FILE"
  fi
  PLATFORM_PASSWORD=$(<"$PLATFORM_PASSWORD_FILE")
  local es="http://127.0.0.1:$ATLAS_ES_PORT" role user
  # The role file without the "description" of the prefix placeholder: same privileges.
  role=$(sed 's/__PREFIX__/atlas/g' "$PLATFORM_ROLE_FILE")
  curl -fsS -m 10 -u "elastic:$ES_PASSWORD" -H 'Content-Type: application/json' \
    -X PUT "$es/_security/role/$PLATFORM_USER" -d "$role" >/dev/null ||
    die "could not put role $PLATFORM_USER"
  user=$(printf '{"password":"%s","roles":["%s"],"full_name":"Atlas platform"}' \
    "$PLATFORM_PASSWORD" "$PLATFORM_USER")
  curl -fsS -m 10 -u "elastic:$ES_PASSWORD" -H 'Content-Type: application/json' \
    -X PUT "$es/_security/user/$PLATFORM_USER" -d "$user" >/dev/null ||
    die "could not put user $PLATFORM_USER"
  curl -fsS -m 10 -u "$PLATFORM_USER:$PLATFORM_PASSWORD" "$es/_cluster/health" >/dev/null ||
    die "user $PLATFORM_USER cannot authenticate"
  log "role + user $PLATFORM_USER in place (indices atlas-*)"
}

pg_install() {
  if ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
    log "installing postgresql via apt"
    apt_install postgresql
  fi
  PG_BIN=$(pg_bin) || die "no initdb under /usr/lib/postgresql/*/bin"
  log "postgres binaries: $PG_BIN"
}

pg_init() {
  if [[ -s $PG_DATA/PG_VERSION ]]; then
    log "cluster exists at $PG_DATA"
  else
    rm -rf "$PG_DATA"
    ensure_owned "$PG_DATA"
    chmod 700 "$PG_DATA"
    # Superuser "postgres": trust over the private unix socket only; TCP needs
    # a password (scram), so DATABASE_URL's atlas:atlas is really checked.
    as_svc "$PG_BIN/initdb" -D "$PG_DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
      --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    log "initdb done: $PG_DATA"
  fi
  ensure_owned "$PG_DATA" "$PG_SOCKET_DIR" "$(dirname "$PG_LOG")"
  chmod 700 "$PG_DATA" "$PG_SOCKET_DIR"
}

pg_start() {
  if pg_running; then
    log "postgresql already running"
  else
    as_svc "$PG_BIN/pg_ctl" start -D "$PG_DATA" -l "$PG_LOG" -w -t 60 -o \
      "-c listen_addresses=127.0.0.1 -p $ATLAS_PG_PORT -c unix_socket_directories=$PG_SOCKET_DIR -c synchronous_commit=off -c fsync=off -c full_page_writes=off" \
      >/dev/null || { tail -n 30 "$PG_LOG" >&2 || true; die "pg_ctl start failed"; }
  fi
  local i
  for ((i = 0; i < 60; i++)); do
    "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$ATLAS_PG_PORT" && break
    sleep 1
  done
  "$PG_BIN/pg_isready" -h 127.0.0.1 -p "$ATLAS_PG_PORT" ||
    { tail -n 30 "$PG_LOG" >&2 || true; die "postgresql not ready on :$ATLAS_PG_PORT"; }
}

pg_provision() {
  as_svc "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCKET_DIR" -p "$ATLAS_PG_PORT" \
    -U postgres -d postgres <<'SQL'
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'atlas') THEN
    CREATE ROLE atlas LOGIN CREATEDB PASSWORD 'atlas';
  ELSE
    ALTER ROLE atlas LOGIN CREATEDB PASSWORD 'atlas';
  END IF;
END
$$;
SELECT 'CREATE DATABASE atlas OWNER atlas'
 WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'atlas')\gexec
SQL
  log "role/database atlas ready"
}

redis_install() {
  if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    log "installing redis-server via apt"
    apt_install redis-server
  fi
}

redis_ping() { [[ $(redis-cli -h 127.0.0.1 -p "$ATLAS_REDIS_PORT" ping 2>/dev/null) == PONG ]]; }

redis_start() {
  ensure_owned "$REDIS_DIR"
  local changed=0
  if write_if_changed "$REDIS_CONF" <<EOF
# Managed by deploy/services/up.sh - edits are overwritten.
bind 127.0.0.1
port $ATLAS_REDIS_PORT
daemonize yes
pidfile $REDIS_PIDFILE
logfile $REDIS_DIR/redis.log
dir $REDIS_DIR
save ""
appendonly no
EOF
  then changed=1; fi
  chown "$ATLAS_SVC_USER:$ATLAS_SVC_USER" "$REDIS_CONF"
  if redis_ping && [[ $changed == 0 ]]; then
    log "redis already up on :$ATLAS_REDIS_PORT"
    return 0
  fi
  if [[ $changed == 1 ]]; then redis_stop; fi
  as_svc redis-server "$REDIS_CONF"
  local i
  for ((i = 0; i < 50; i++)); do
    redis_ping && break
    sleep 0.2
  done
  redis_ping || { tail -n 30 "$REDIS_DIR/redis.log" >&2 || true; die "redis not answering on :$ATLAS_REDIS_PORT"; }
  log "redis up on :$ATLAS_REDIS_PORT"
}

write_env() {
  mkdir -p "$ENV_DIR"
  local tmp
  tmp=$(mktemp "$ENV_FILE.XXXXXX")
  cat >"$tmp" <<EOF
ATLAS_ES_URL=http://127.0.0.1:$ATLAS_ES_PORT
ATLAS_ES_USERNAME=$PLATFORM_USER
ATLAS_ES_PASSWORD=$PLATFORM_PASSWORD
ATLAS_ES_ADMIN_USERNAME=elastic
ATLAS_ES_ADMIN_PASSWORD=$ES_PASSWORD
ATLAS_ES_VERSION=$ES_VERSION
ATLAS_ES_SNAPSHOT_LOCATION=$ES_SNAPSHOTS/atlas
DATABASE_URL=postgres://atlas:atlas@127.0.0.1:$ATLAS_PG_PORT/atlas
REDIS_URL=redis://127.0.0.1:$ATLAS_REDIS_PORT/0
CELERY_BROKER_URL=redis://127.0.0.1:$ATLAS_REDIS_PORT/1
EOF
  chmod 600 "$tmp"
  # Let the repo's owner read it when the repo is not root's.
  chown --reference="$REPO_ROOT" "$tmp" 2>/dev/null || true
  mv -f "$tmp" "$ENV_FILE"
  log "wrote $ENV_FILE"
}

main() {
  local t0=$SECONDS
  step "prepare" prepare
  step "elasticsearch: download/unpack" es_download
  step "elasticsearch: atlas-analysis plugin" es_install_analysis_plugin
  step "elasticsearch: configure" es_configure
  step "elasticsearch: start + wait healthy" es_start
  step "elasticsearch: licence" es_check_license
  step "elasticsearch: platform role" es_platform_role
  step "postgresql: install" pg_install
  step "postgresql: init" pg_init
  step "postgresql: start" pg_start
  step "postgresql: role + database" pg_provision
  step "redis: install" redis_install
  step "redis: start" redis_start
  step "env file" write_env
  log "all services up in $((SECONDS - t0))s"
}

main "$@"
