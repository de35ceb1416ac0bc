#!/usr/bin/env bash
# The checks that need a GPU (issues 2, 3, 7 and 17), as one prepared run of 8 minutes at most on one
# H100/H200-class GPU. For a machine with CUDA, torch, pandas, PyYAML, tqdm, scikit-learn, pytest and
# hypothesis installed and mr2 not installed (it is imported from this checkout). Writes everything to
# $OUT (default results/gpu_check): device.txt, tests.txt, bench_train_graph.md, bench_train_eager.md,
# bench_loss.md, bench_train_concurrent.md. Each step has its own time limit (480 s in all), so a slow
# step costs only itself.
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

step 10 device.txt bash -c "nvidia-smi; $PY -c 'import torch; print(torch.__version__, torch.cuda.get_device_name())'"
# correctness first: the CUDA loss equals the CPU loss, sync-free step, on-device augmentation, the
# whole-step CUDA graph trains as the eager step does, and exactly the capturable losses capture
step 120 tests.txt "$PY" -m pytest -q -p no:cacheprovider tests/test_cuda.py tests/test_speed.py tests/test_augment.py -k cuda
# issue 17's goals: ResNet-32 CIFAR-100-shaped 50k-image epochs with train.cuda_graph, erm/mr2 x fp32/bf16
# (MR² bf16 at most 1.5 s per epoch; MR² at most 5 % over ERM in the same precision)
step 90 bench_train_graph.md "$PY" benchmarks/bench_train.py --device cuda --threads 8 --cases device,graph
# the eager bf16 step of the same session, for comparison
step 50 bench_train_eager.md "$PY" benchmarks/bench_train.py --device cuda --threads 8 --cases device,bf16,eager
# issue 2: the vectorised loss against the per-class loop on CUDA
step 40 bench_loss.md "$PY" benchmarks/bench_loss.py --devices cuda --classes 100 1000 --batch 128 512 --repeats 8
# issue 17: 1 and 12 `python -m mr2 train` processes at once on the GPU (MR², bf16, cuda_graph): the
# paper's table, 12 runs x 200 epochs, takes ceil(12/N) * 200 * t_N (its last column; goal 45 min)
step 170 bench_train_concurrent.md "$PY" benchmarks/bench_train.py --device cuda --threads 1 --epochs 2 --concurrent 1 12
echo "[gpu_check] done: $OUT"
