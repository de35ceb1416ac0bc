#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV="${MR2_VENV:-$HOME/.cache/mr2/venv}"
export PATH="$VENV/bin:$PATH"
exec python -m pytest -q "$@"
