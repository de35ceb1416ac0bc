#!/usr/bin/env bash
# The checks that need a GPU (issues 2, 3 and 7), as one prepared run of about 10 minutes on one
# H100/H200-class GPU. For a machine with CUDA, torch, pandas, pytest and hypothesis installed and
# mr2 not installed (it is imported from this checkout). Writes everything to $OUT (default
# results/gpu_check): device.txt, tests.txt, bench_train_mr2.md, bench_loss.md, bench_train_erm.md,
# bench_train_dataloader.md. Each step has its own time limit, so a slow step costs only itself.
#   bash scripts/gpu_check.sh            # then copy the tables into BENCHMARKS.md with the hardware line
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-results/gpu_check}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"

step() {  # step <seconds> <output file> <command...>: run with a limit, keep its output
    local limit=$1 file=$2
    shift 2
    echo "[gpu_check] $(date +%T) $* (limit ${limit}s) -> $OUT/$file"
    timeout "$limit" "$@" 2>&1 | tee "$OUT/$file"
    echo "[gpu_check] exit ${PIPESTATUS[0]}"
}

step 30 device.txt bash -c "nvidia-smi; $PY -c 'import torch; print(torch.__version__, torch.cuda.get_device_name())'"
# correctness first: the CUDA loss equals the CPU loss, sync-free step, on-device augmentation
step 120 tests.txt "$PY" -m pytest -q -p no:cacheprovider tests/test_cuda.py tests/test_speed.py tests/test_augment.py -k cuda
# issue 7's goal: a ResNet-32 CIFAR-100 epoch (50,000 images) with MR² in at most 3 s
step 200 bench_train_mr2.md "$PY" benchmarks/bench_train.py --device cuda --threads 8 --cases device,mr2
# issue 2: the vectorised loss against the per-class loop on CUDA
step 60 bench_loss.md "$PY" benchmarks/bench_loss.py --devices cuda --classes 100 1000 --batch 128 512
# issue 3: MR²'s overhead over ERM (compare with bench_train_mr2.md)
step 150 bench_train_erm.md "$PY" benchmarks/bench_train.py --device cuda --threads 8 --cases device,erm
step 60 bench_train_dataloader.md "$PY" benchmarks/bench_train.py --device cuda --threads 8 --workers 8 --cases dataloader,off
echo "[gpu_check] done: $OUT"
