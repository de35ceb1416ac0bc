"""The same bytes on every CPU of a vendor: a tiny training run's digest against the one pinned for this
CPU's vendor (issue 58). One digest for every vendor is the goal, not measured: no Intel machine was
at hand (BENCHMARKS.md). A vendor, or a torch, with no pinned digest is reported as a skip naming the
digest to pin, never a failure: CI must not fail only for landing on another vendor's machine."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PINNED = json.loads((Path(__file__).resolve().parent / "fingerprints.json").read_text(encoding="utf-8"))


def fingerprint(*args: str) -> dict:
    """``benchmarks/fingerprint.py`` in a fresh process (mr2 imported before torch: the kernel cap holds)."""
    res = subprocess.run([sys.executable, str(REPO / "benchmarks" / "fingerprint.py"), *args], capture_output=True,
                         text=True, cwd=REPO, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO),
                                                   "HOME": str(Path.home())})
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout)


@pytest.mark.parametrize("setting, args", [("default", ()), ("no_mkldnn", ("--no-mkldnn",))])
def test_a_tiny_training_run_gives_the_digest_pinned_for_this_cpu_vendor(setting, args):
    found = fingerprint(*args)
    assert found["mkldnn"] == (setting == "default")
    pinned = PINNED.get(found["vendor"], {}).get(found["torch"], {}).get(setting)
    if pinned is None:
        pytest.skip(f"no digest pinned for {found['vendor']} with torch {found['torch']} ({setting}): this machine "
                    f"({found['cpu']}) gives {found['digest']}; pin it in tests/fingerprints.json")
    assert found["digest"] == pinned, (f"{found['cpu']} ({found['vendor']}, torch {found['torch']}, kernels "
                                       f"{found['cpu_kernels']}) trained other bytes than the pinned ones")
