"""PyTorch's CPU kernels capped at AVX2 (mr2.common.kernels), so a run gives the same numbers on
every x86-64 host: AVX-512 kernels round otherwise and moved the default's numbers by 0.1-0.5 points."""

import os
import platform
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import pipeline_env, read_run_folders
from mr2.common.kernels import CHOICE, KERNEL_CAPS, X86_64, pin_cpu_kernels
from mr2.engine.record import kernels_line

REPO = Path(__file__).resolve().parents[1]
CAPABILITY = "import torch; print(torch.backends.cpu.get_cpu_capability())"


def cpuinfo(field: str) -> str:
    """A field of the first CPU in /proc/cpuinfo ("flags", "vendor_id"); "" where there is none."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return ""
    return next((line.split(":", 1)[1].strip() for line in lines if line.split(":", 1)[0].strip() == field), "")


def cpu_flags() -> set[str]:
    return set(cpuinfo("flags").split())


def capability(code: str, **env: str) -> str:
    """The ATen CPU capability a fresh Python process ends up with after ``code``."""
    environ = {k: v for k, v in os.environ.items() if k not in (*KERNEL_CAPS, CHOICE)}
    done = subprocess.run([sys.executable, "-c", f"{code}; {CAPABILITY}"], capture_output=True, text=True,
                          env={**environ, "PYTHONPATH": str(REPO), **env}, check=True)
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("machine", ["x86_64", "AMD64"])
def test_an_x86_64_machine_gets_every_cap(machine):
    env = {}
    caps = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"}
    assert pin_cpu_kernels(env, machine) == caps and env == caps


def test_a_value_the_user_set_is_kept_and_native_or_arm_sets_nothing():
    env = {"ATEN_CPU_CAPABILITY": "default"}
    assert pin_cpu_kernels(env, "x86_64") == {"ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"}
    assert env["ATEN_CPU_CAPABILITY"] == "default"
    for env, machine in (({CHOICE: "native"}, "x86_64"), ({CHOICE: "Native "}, "x86_64"), ({}, "aarch64"),
                         ({}, "arm64")):
        before = dict(env)
        assert pin_cpu_kernels(env, machine) == {} and env == before


def test_an_unknown_choice_is_an_error_naming_the_variable():
    with pytest.raises(ValueError, match=r"MR2_CPU_ISA='avx512': must be one of \('avx2', 'native'\)"):
        pin_cpu_kernels({CHOICE: "avx512"}, "x86_64")


@pytest.mark.skipif(platform.machine().lower() not in X86_64 or "avx2" not in cpu_flags(),
                    reason="needs an x86-64 CPU with AVX2")
def test_importing_mr2_before_torch_runs_avx2_kernels_and_native_lifts_it():
    assert capability("import mr2") == "AVX2"
    assert capability("import mr2", **{CHOICE: "native"}) == capability("pass")  # the host's own
    if "avx512f" in cpu_flags():  # where the cap changes something, it is visible
        assert capability("pass") == "AVX512"


def test_a_run_says_its_kernels_and_warns_where_the_cap_came_too_late():
    assert kernels_line("AVX2", {"ATEN_CPU_CAPABILITY": "avx2"}) == "CPU kernels: AVX2"
    assert kernels_line("AVX512", {CHOICE: "native"}) == "CPU kernels: AVX512"
    late = kernels_line("AVX512", {"ATEN_CPU_CAPABILITY": "avx2"})
    assert late.startswith("CPU kernels: AVX512 - not the AVX2 asked for") and "import mr2 first" in late


DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")
SNAPSHOT = REPO / "docs" / "results" / "tuned-fashion-mnist"


@pytest.mark.slow
@pytest.mark.skipif(not DEBIAN_FASHION_MNIST.is_dir(), reason="Debian fashion-mnist files not installed")
@pytest.mark.skipif(cpuinfo("vendor_id") != "AuthenticAMD" or "avx2" not in cpu_flags(),
                    reason="the snapshot's numbers are checked on AMD x86-64 CPUs with AVX2 (the machines they were "
                           "made and reproduced on); another vendor's libraries may pick other blockings")
def test_a_run_here_gives_the_numbers_a_snapshot_from_another_machine_holds(tmp_path):
    """ERM, seed 0, of the tuned Fashion-MNIST config, run by the workflow in a process whose
    environment sets no kernel cap: its per-class test accuracies and a_k equal, digit for digit, those
    the committed snapshot holds, which an AVX2-only machine made (an AVX-512 one without the cap
    differs by up to a point per class)."""
    tuned = yaml.safe_load((REPO / "config" / "tuned-fashion-mnist.yaml").read_text())
    config = {"datasets": tuned["datasets"], "methods": ["erm"], "seeds": [0], "output_root": str(tmp_path / "out")}
    (tmp_path / "erm.yaml").write_text(yaml.safe_dump(config))
    env = {k: v for k, v in pipeline_env().items() if k not in (*KERNEL_CAPS, CHOICE)}

    def snakemake(*targets: str) -> None:
        cmd = [sys.executable, "-m", "snakemake", *targets, "-s", str(REPO / "Snakefile"), "--cores", "1",
               "--configfile", str(tmp_path / "erm.yaml")]
        res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]

    snakemake("run_folders")
    folders = read_run_folders(tmp_path / "out" / "run_folders.tsv", root=str(tmp_path / "out"))
    measured = Path(folders[("fashion_mnist", "erm", "default", 0)]) / "eval" / "per_class.csv"
    snakemake(str(measured))
    here = pd.read_csv(measured).set_index("class")
    kept = pd.read_csv(SNAPSHOT / "per_class.csv")
    kept = kept[kept["dataset"].eq("fashion_mnist") & kept["method"].eq("erm") & kept["seed"].eq(0)].set_index("class")
    assert len(kept) == 10 and list(here.index) == list(kept.index)
    assert here["accuracy"].tolist() == kept["accuracy"].tolist()
    assert here["a"].tolist() == pytest.approx(kept["a"].tolist(), rel=1e-12, abs=0)
