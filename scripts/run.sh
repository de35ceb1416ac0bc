#!/usr/bin/env bash
# Set up (idempotent) and run the replication pipeline, then build the HTML report.
# Extra arguments go to snakemake, e.g. --configfile config/cifar100.yaml
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV="${MR2_VENV:-$HOME/.cache/mr2/venv}"
export PATH="$VENV/bin:$PATH"
snakemake --cores all "$@"
snakemake --report results/report.html "$@"
echo "[run] done: results/report.md, results/report.html, results/tables/, results/figures/"
