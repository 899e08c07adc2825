#!/usr/bin/env bash
# The scale-out run, one command (`make scaleout`; deploy/scaleout/README.md): a 3-node
# Elasticsearch cluster on loopback (cluster.sh), a database of its own, Atlas on gunicorn with
# several workers and two Celery workers against it (driver.py), a write + recall load with one
# data node SIGKILLed and restarted mid-load; prints what was lost, duplicated and refused.
# Everything it started is stopped again, whatever happens. Needs `make services` (PostgreSQL,
# Redis, and the ES distribution it unpacks) and root (the nodes run as the services' user).
# Arguments go to driver.py (--web, --writers, --readers, --before, --down, --after, --json).
# SCALEOUT_NODES (default 3) sets the cluster's size: the test suite runs it with 2
# (tests/deploy/test_scaleout.py); SCALEOUT_RUN_DIR where the run keeps its logs and files.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$REPO_ROOT"
CLUSTER=deploy/scaleout/cluster.sh
PY=${PY:-.venv/bin/python}
[[ -f .services/env ]] || { echo "run make services first (.services/env)" >&2; exit 1; }
set -a
# shellcheck disable=SC1091
source .services/env
set +a
# The shared PostgreSQL and Redis, but a database and Redis databases of this run's own.
SCALEOUT_DB=${SCALEOUT_DB:-atlas_scaleout_run}
SCALEOUT_REDIS_DB=${SCALEOUT_REDIS_DB:-14}
SCALEOUT_NODES=${SCALEOUT_NODES:-3}
SCALEOUT_RUN_DIR=${SCALEOUT_RUN_DIR:-var/scaleout}
redis_base=${REDIS_URL%/*}
pg_base=${DATABASE_URL%/*}

cleanup() {
  bash "$CLUSTER" down || true
}
trap cleanup EXIT INT TERM

rm -rf "$SCALEOUT_RUN_DIR"
mkdir -p "$SCALEOUT_RUN_DIR/var"
bash "$CLUSTER" up "$SCALEOUT_NODES" >"$SCALEOUT_RUN_DIR/cluster.env.tmp"
grep '^ATLAS_ES_' "$SCALEOUT_RUN_DIR/cluster.env.tmp" >"$SCALEOUT_RUN_DIR/cluster.env"
set -a
# shellcheck disable=SC1091
source "$SCALEOUT_RUN_DIR/cluster.env"
set +a
export DATABASE_URL="$pg_base/$SCALEOUT_DB"
export CELERY_BROKER_URL="$redis_base/$SCALEOUT_REDIS_DB"
export ATLAS_CACHE_URL="$redis_base/$((SCALEOUT_REDIS_DB + 1))"
export REDIS_URL="$ATLAS_CACHE_URL"
export ATLAS_ES_REPLICAS=1 ATLAS_MEMORY_BACKEND=elasticsearch
export ATLAS_VAR_DIR="$REPO_ROOT/$SCALEOUT_RUN_DIR/var"
export ATLAS_RATE_WRITE=100000/min ATLAS_RATE_RECALL=100000/min ATLAS_RATE_READ=100000/min
# Longer cluster budgets than the defaults (5 s reads, 10 s writes): on the shared 2-core machine
# at a load average of 30, recalls timed out before any node was killed.
export ATLAS_ES_READ_TIMEOUT_S=${ATLAS_ES_READ_TIMEOUT_S:-15} ATLAS_ES_TIMEOUT_S=${ATLAS_ES_TIMEOUT_S:-30}
export DJANGO_SETTINGS_MODULE=atlas_platform.settings
export PYTHONPATH="$REPO_ROOT${PYTHONPATH:+:$PYTHONPATH}"
redis-cli -u "$CELERY_BROKER_URL" flushdb >/dev/null
redis-cli -u "$ATLAS_CACHE_URL" flushdb >/dev/null
"$PY" - <<PYEOF
import psycopg
with psycopg.connect("$pg_base/postgres", autocommit=True) as conn:
    conn.execute('DROP DATABASE IF EXISTS "$SCALEOUT_DB" WITH (FORCE)')
    conn.execute('CREATE DATABASE "$SCALEOUT_DB"')
PYEOF
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" deploy/scaleout/driver.py --run-dir "$SCALEOUT_RUN_DIR" --json "$SCALEOUT_RUN_DIR/scaleout.json" "$@"
