#!/usr/bin/env bash
# Stop the Elasticsearch, PostgreSQL and Redis started by up.sh.
# Idempotent: anything already down is reported and skipped. Data is kept.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$SCRIPT_DIR/lib.sh"

main() {
  require_root
  if [[ ! -d $ATLAS_SERVICES_DIR ]]; then
    log "nothing to stop ($ATLAS_SERVICES_DIR does not exist)"
    return 0
  fi
  step "elasticsearch: stop" es_stop
  if id -u "$ATLAS_SVC_USER" >/dev/null 2>&1; then
    step "postgresql: stop" pg_stop
  else
    log "postgresql: no $ATLAS_SVC_USER user, nothing to stop"
  fi
  step "redis: stop" redis_stop
  log "all services down (data kept in $ATLAS_SERVICES_DIR)"
}

main "$@"
