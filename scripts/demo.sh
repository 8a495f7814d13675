#!/usr/bin/env bash
# The one demo command: sets up what is missing, then starts the local stack in the foreground.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node dist/scripts/demo.js
