"""Shared fixtures, and the suite's two tiers.

  python -m pytest -m "not slow"   the developer's loop (a few minutes): every test except those
                                   marked ``slow``
  python -m pytest                 everything (``bash scripts/test.sh``, the README's command)

``slow`` (pyproject.toml) marks the end-to-end pipeline runs, which take minutes: every test that runs
Snakemake (``run_snakemake``, dry or real, ``run_folders``) or reads the smoke run's results
(``smoke_workdir``, ``smoke_results``, the notebooks run on them), and a few single heavy cases
(ViT-B/16's forward pass, MNIST-1D at its default size). A new test of that kind is marked
``@pytest.mark.slow``.
"""

import os
import sys

import pytest
import torch

# One intra-op thread: on a loaded 2-core machine two threads make small ops ~50x slower.
torch.set_num_threads(1)


#: set by scripts/mutation.sh: each mutant's tests run in a process forked after a clean run
MUTATION = bool(os.environ.get("MR2_MUTATION"))


@pytest.fixture(autouse=MUTATION)
def fresh_caches():
    """Under mutation testing, empty the library's memoised functions before each test: a result the
    clean run cached (a Lagrangian solved, a noncentrality found) would otherwise hide a mutant in the
    code that computed it. Outside mutation testing the caches are shared, as in use."""
    from mr2.results.statistics import _noncentrality
    from theory.corollary import solve_lagrangian

    solve_lagrangian.cache_clear()
    _noncentrality.cache_clear()


@pytest.fixture(autouse=True)
def close_figures():
    """Close every figure a test leaves open (a test that inspects a figure keeps it open to the end),
    so that no figure reaches another test's check that a function closed its own."""
    yield
    plt = sys.modules.get("matplotlib.pyplot")  # only where a test drew: no import on the others' path
    if plt is not None:
        plt.close("all")


@pytest.fixture
def gen():
    """A seeded CPU generator for test data."""
    return torch.Generator().manual_seed(0)


@pytest.fixture
def sync_free_paths(monkeypatch):
    """Take the code paths a CUDA device takes: host reads are not free (``mr2.method.hostsync``)."""
    from mr2.method import hostsync

    monkeypatch.setattr(hostsync, "host_reads_are_free", lambda device: False)


@pytest.fixture(scope="session")
def digits(tmp_path_factory):
    """scikit-learn's digits as a prepared dataset file (the engine tests' small real data)."""
    from mr2.engine.data import prepare_dataset

    path = tmp_path_factory.mktemp("data") / "digits.pt"
    prepare_dataset({"name": "digits"}, path)
    return path


REPO = __import__("pathlib").Path(__file__).resolve().parents[1]


def pipeline_env():
    """The environment for running the workflow: this interpreter's bin first on PATH."""
    bindir = os.path.dirname(os.path.realpath(__import__("sys").executable))
    return {**os.environ, "PATH": f"{os.path.dirname(__import__('sys').executable)}:{bindir}:{os.environ['PATH']}"}


def workdir_with_configs(dest):
    """A fresh working directory holding a copy of the repository's config/ (to edit in a test). The
    workflow itself runs from the repository (``snakemake -s <repo>/Snakefile``, see run_snakemake):
    every pipeline test runs it from a directory other than the repository's."""
    import shutil

    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "config", dest / "config")
    return dest


def run_snakemake(workdir, *args, check=True, snakefile=REPO / "Snakefile"):
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "--cores", "2", *args]
    res = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, env=pipeline_env())
    if check and res.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{res.stdout[-3000:]}\n{res.stderr[-5000:]}")
    return res


def read_run_folders(path, root="results"):
    """{(dataset, method, variant, seed): run folder} from a run_folders.tsv (folders under ``root``)."""
    rows = [line.split("\t") for line in path.read_text().splitlines()[1:]]
    return {(d, m, v, int(s)): f"{root}/{folder}" for d, m, v, s, folder in rows}


def run_folders(workdir, *args):
    """The run folders of a config as the workflow lists them (its `run_folders` step; ``args`` the config's)."""
    run_snakemake(workdir, "run_folders", *args)
    return read_run_folders(workdir / "results" / "run_folders.tsv")


@pytest.fixture(scope="session")
def smoke_workdir(tmp_path_factory):
    """A working directory (not the repository) in which the smoke config has run end to end (once per session).
    Skipped under mutation testing (``MR2_MUTATION`` set by scripts/mutation.sh): the run's steps are
    subprocesses, which do not see the mutant under test, and the run takes minutes per mutant."""
    if MUTATION:
        pytest.skip("end-to-end smoke run: not under mutation testing")
    workdir = workdir_with_configs(tmp_path_factory.mktemp("smoke"))
    run_snakemake(workdir, "--configfile", "config/smoke.yaml")
    return workdir


@pytest.fixture(scope="session")
def smoke_results(smoke_workdir):
    """The results/ folder of the smoke run."""
    return smoke_workdir / "results"
