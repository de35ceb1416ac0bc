#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh  # the venv's tools; this clone's code first on PYTHONPATH
exec python -m pytest -q "$@"
