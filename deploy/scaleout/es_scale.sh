#!/usr/bin/env bash
# Elasticsearch recall at scale (`make bench-es-scale`; deploy/scaleout/README.md): a
# one-node cluster of its own on loopback (cluster.sh, SCALEOUT_HEAP, default 1g here), a
# database of its own, then the lab's `manage.py bench_es_scale` (synthetic vectors, bulk-loaded
# into the engine's index layout). The cluster and its data are removed at the end. Arguments go
# to bench_es_scale (--sizes, --tenants, --per-tenant, --recalls, --json).
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
SCALE_DB=${SCALE_DB:-atlas_es_scale}
pg_base=${DATABASE_URL%/*}
# A directory and ports of its own: it may run beside the scale-out run's cluster.
export SCALEOUT_HEAP=${SCALEOUT_HEAP:-1g} SCALEOUT_DIR=${SCALEOUT_DIR:-/var/tmp/atlas-es-scale}
export SCALEOUT_HTTP_BASE=${SCALEOUT_HTTP_BASE:-29220} SCALEOUT_TRANSPORT_BASE=${SCALEOUT_TRANSPORT_BASE:-29320}

trap 'bash "$CLUSTER" down || true' EXIT INT TERM
mkdir -p var
bash "$CLUSTER" up 1 | grep '^ATLAS_ES_' >var/es-scale-cluster.env
set -a
# shellcheck disable=SC1091
source var/es-scale-cluster.env
set +a
export DATABASE_URL="$pg_base/$SCALE_DB" ATLAS_MEMORY_BACKEND=elasticsearch
export ATLAS_VAR_DIR="$REPO_ROOT/var/es-scale" ATLAS_ES_TIMEOUT_S=60 ATLAS_ES_READ_TIMEOUT_S=30
export CELERY_BROKER_URL=memory:// ATLAS_CACHE_URL=locmemcache://
export DJANGO_SETTINGS_MODULE=lab.settings
export PYTHONPATH="$REPO_ROOT:$REPO_ROOT/atlas-lab${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$ATLAS_VAR_DIR"
"$PY" - <<PYEOF
import psycopg
with psycopg.connect("$pg_base/postgres", autocommit=True) as conn:
    conn.execute('DROP DATABASE IF EXISTS "$SCALE_DB" WITH (FORCE)')
    conn.execute('CREATE DATABASE "$SCALE_DB"')
PYEOF
"$PY" manage.py migrate --noinput -v0
"$PY" manage.py bench_es_scale "$@"
