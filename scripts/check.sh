#!/usr/bin/env bash
# Exactly what CI runs, locally.
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash .ci/run
