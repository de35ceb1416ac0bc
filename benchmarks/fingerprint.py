"""The same bytes on every CPU? A fingerprint of training (figures, not a test; tests/test_fingerprint.py
compares it with the digest pinned for this CPU's vendor in tests/fingerprints.json).

  python benchmarks/fingerprint.py                 this machine's vendor, CPU, torch and the digest
  python benchmarks/fingerprint.py --no-mkldnn     the same with oneDNN off (torch.backends.mkldnn)
  python benchmarks/fingerprint.py --speed         ms per training step of the small CNN, oneDNN on and off

The fingerprint trains mr2's small CNN (convolutions: oneDNN; the linear head: MKL's sgemm; the loss:
libm's exp and log) for a few SGD steps on scikit-learn's bundled 8x8 digits, one thread, from a fixed
seed, under the kernel cap mr2 sets when it is imported (``mr2.common.kernels``: AVX2 for ATen, oneDNN
and MKL), and prints the SHA-256 of the trained weights' bytes. Two machines that print the same digest
compute the same training steps bit for bit. ``--speed`` times the small CNN on Fashion-MNIST's shape
(batch 128 of 1x28x28, 10 classes), the cost of the candidate fix for a vendor difference (oneDNN off).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import time

import mr2  # noqa: F401  (the kernel cap, before torch runs its first operator)
from mr2.common.kernels import cpu_model, cpu_vendor, kernel_settings

import torch  # noqa: E402  (after mr2: the cap applies)

STEPS, BATCH, SEED, WIDTH = 8, 64, 0, 8


def train_steps(steps: int = STEPS) -> torch.nn.Module:
    """The small CNN after ``steps`` SGD steps (momentum 0.9, lr 0.1) on the first digits."""
    from sklearn.datasets import load_digits

    from mr2.engine.models.factory import build_model

    torch.manual_seed(SEED)
    digits = load_digits()
    x = torch.tensor(digits.images[: steps * BATCH], dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(digits.target[: steps * BATCH], dtype=torch.int64)
    model = build_model("small_cnn", 10, (1, 8, 8), width=WIDTH)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model.train()
    for step in range(steps):
        batch = slice(step * BATCH, (step + 1) * BATCH)
        logits, _ = model(x[batch])
        loss = torch.nn.functional.cross_entropy(logits, y[batch])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return model


def weights_digest(model: torch.nn.Module) -> str:
    """SHA-256 of every parameter and buffer of ``model``, by name, as raw bytes."""
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()


def fingerprint(mkldnn: bool = True) -> dict[str, str]:
    """This machine and the digest of ``train_steps`` on it (oneDNN on or off)."""
    torch.set_num_threads(1)
    torch.backends.mkldnn.enabled = mkldnn
    return {"vendor": cpu_vendor(), "cpu": cpu_model(), "machine": platform.machine(), "torch": torch.__version__,
            "cpu_kernels": torch.backends.cpu.get_cpu_capability(), "mkldnn": mkldnn,
            "kernel_settings": kernel_settings(), "digest": weights_digest(train_steps())}


def step_times(mkldnn: bool, steps: int, batch: int = 128) -> list[float]:
    """Seconds of each of ``steps`` training steps of the small CNN (width 32, 1x28x28, 10 classes)."""
    from mr2.engine.models.factory import build_model

    torch.backends.mkldnn.enabled = mkldnn
    torch.manual_seed(SEED)
    model = build_model("small_cnn", 10, (1, 28, 28))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y = torch.rand(batch, 1, 28, 28), torch.randint(0, 10, (batch,))
    times = []
    for _ in range(steps + 2):  # two warm-up steps
        start = time.perf_counter()
        logits, _ = model(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        times.append(time.perf_counter() - start)
    return times[2:]


def speed(rounds: int, steps: int, threads: int) -> None:
    """Interleaved rounds of oneDNN on and off; the median ms per step of each and their ratio."""
    torch.set_num_threads(threads)
    seen: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for mkldnn in (True, False):
            seen[mkldnn] += step_times(mkldnn, steps)
    median = {k: sorted(v)[len(v) // 2] * 1000 for k, v in seen.items()}
    load = open("/proc/loadavg").read().split()[0] if platform.system() == "Linux" else "?"
    print(f"{cpu_vendor()} | {cpu_model()} | torch {torch.__version__} | kernels "
          f"{torch.backends.cpu.get_cpu_capability()} | threads {threads} | load average {load}")
    print(f"small_cnn, batch 128 of 1x28x28, one SGD step, median of {rounds} x {steps} steps:")
    print(f"  oneDNN on:  {median[True]:.2f} ms")
    print(f"  oneDNN off: {median[False]:.2f} ms  ({median[False] / median[True]:.2f}x)")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-mkldnn", action="store_true", help="train with torch.backends.mkldnn off")
    ap.add_argument("--speed", action="store_true", help="time training steps with oneDNN on and off")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    if args.speed:
        speed(args.rounds, args.steps, args.threads)
    else:
        print(json.dumps(fingerprint(mkldnn=not args.no_mkldnn), indent=1))


if __name__ == "__main__":
    main()
