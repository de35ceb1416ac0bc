#!/usr/bin/env bash
# Set up (idempotent) and run the replication pipeline, build the HTML report, print the results table.
# Extra arguments go to snakemake, e.g. --configfile config/cifar100.yaml
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh  # the venv's tools; this clone's code first on PYTHONPATH
snakemake --cores all "$@"
snakemake --report results/report.html "$@"
echo "[run] done: results/report.md, results/report.html, results/tables/, results/figures/"
echo
cat results/tables/results.md
