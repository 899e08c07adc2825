#!/usr/bin/env bash
# Install the headless browser the browser tests drive (tests/browser/): Debian's chromium.
# Playwright drives it through executable_path; nothing ever downloads a browser
# (never run `playwright install`). Idempotent; needs root only when chromium is missing.
set -euo pipefail

CHROMIUM="${ATLAS_CHROMIUM:-/usr/bin/chromium}"

if [[ -x $CHROMIUM ]]; then
  exit 0
fi
if [[ $EUID -ne 0 ]]; then
  # Not fatal here: the browser tests then skip locally, and fail under
  # ATLAS_REQUIRE_SERVICES=1 (CI, which runs as root and gets the install below).
  echo "[atlas-browser] $CHROMIUM missing; run as root to apt-get install chromium" >&2
  exit 0
fi
echo "[atlas-browser] installing chromium (apt)"
DEBIAN_FRONTEND=noninteractive apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
  chromium fonts-dejavu-core
[[ -x $CHROMIUM ]] || { echo "[atlas-browser] chromium did not install" >&2; exit 1; }
