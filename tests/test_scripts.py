"""The shell scripts stay runnable: syntax, and the GPU check's tests and benchmark cases exist."""

import hashlib
import importlib.util
import os
import re
import subprocess
import sys

import pytest
import torch
from conftest import REPO

SCRIPTS = sorted((REPO / "scripts").glob("*.sh"))
GPU_CHECK = (REPO / "scripts" / "gpu_check.sh").read_text()


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_syntax(script):
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0


def test_gpu_check_names_existing_tests_that_hold_cuda_tests():
    paths = re.findall(r"tests/test_\w+\.py", GPU_CHECK)
    assert paths and all((REPO / p).is_file() for p in paths)
    assert all("cuda" in (REPO / p).read_text() for p in paths)


def bench_train():
    spec = importlib.util.spec_from_file_location("bench_train", REPO / "benchmarks" / "bench_train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_check_benchmark_cases_select_what_they_say():
    cases = bench_train().cases
    cuda = torch.device("cuda")  # building the case list needs no GPU
    filters = re.findall(r"--cases (\S+)", GPU_CHECK)
    assert filters == ["device,graph", "device,bf16,eager"]
    graph, eager = (cases(cuda, f) for f in filters)
    assert sorted(graph) == sorted(("device", m, amp, "graph") for m in ("erm", "mr2") for amp in ("off", "bf16"))
    assert sorted(eager) == [("device", "erm", "bf16", "eager"), ("device", "mr2", "bf16", "eager")]
    assert cases(torch.device("cpu"), "graph") == []  # the CUDA graph needs CUDA
    assert re.search(r"--concurrent 1 12\b", GPU_CHECK)


def test_gpu_check_fits_in_eight_minutes():
    limits = [int(n) for n in re.findall(r"^step (\d+) ", GPU_CHECK, flags=re.M)]
    assert len(limits) == 6 and sum(limits) <= 8 * 60, limits


def test_concurrent_training_benchmark_reports_the_processes_together(tmp_path):
    """Two ``python -m mr2 train`` processes at once (a small model on the CPU): one table row."""
    res = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_train.py"), "--device", "cpu", "--model", "mlp",
                          "--images", "256", "--batch", "64", "--epochs", "1", "--threads", "1", "--concurrent", "2"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = [line for line in res.stdout.splitlines() if line.startswith("| 2 |")]
    assert len(rows) == 1 and rows[0].startswith("| 2 | mr2 | fp32 | eager | "), res.stdout
    together, wall, epoch_s, table_min = (float(c.replace(",", "")) for c in rows[0].strip("| ").split(" | ")[4:])
    assert 0 < wall < together and epoch_s == pytest.approx(2 * 50_000 / together, rel=0.01)
    assert table_min == pytest.approx(6 * 200 * epoch_s / 60, rel=0.01)  # ⌈12/2⌉ waves of 200 epochs


def test_loss_benchmark_skips_an_absent_device():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    res = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_loss.py"), "--devices", "cuda", "--classes", "10",
                          "--batch", "8", "--dims", "4", "--repeats", "1"], capture_output=True, text=True)
    assert res.returncode == 0 and "| device |" in res.stdout and "| cpu |" not in res.stdout


def test_loss_benchmark_across_processes_reports_the_ratio_range():
    res = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_loss.py"), "--devices", "cpu", "--classes", "10",
                          "--batch", "8", "--dims", "4", "--repeats", "1", "--processes", "2"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    rows = [line for line in res.stdout.splitlines() if line.startswith("| cpu |")]
    assert len(rows) == 1 and rows[0].startswith("| cpu | 10 | 8 | 4 |")
    low, high = map(float, re.search(r"\((\d+\.\d)–(\d+\.\d)×\) \|$", rows[0]).groups())
    assert low <= high and "2/2 done" in res.stderr


def test_setup_repairs_a_venv_that_a_failed_creation_left_without_pip(tmp_path):
    """Debian's venv without its pythonX.Y-venv package leaves bin/python and no pip; the set-up
    must not skip such a venv as made. (Its requirements are marked installed here, so only the
    repair runs.)"""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    digest = hashlib.sha256((REPO / "requirements.txt").read_bytes()).hexdigest()[:16]
    (venv / f".mr2-{digest}").touch()
    res = subprocess.run(["bash", str(REPO / "scripts" / "setup.sh")], capture_output=True, text=True,
                         env={**os.environ, "MR2_VENV": str(venv)}, timeout=300)
    assert "[setup] repairing venv" in res.stdout
    assert subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "--version"], capture_output=True).returncode == 0


def run_mutation_script(tmp_path, target, out, **env):
    """scripts/mutation.sh with stubs of a python that has mutmut and of mutmut itself: nothing is
    installed, mutated or run; the work folder and its config are written under ``out``."""
    for tool in ("python", "mutmut"):
        (tmp_path / tool).write_text("#!/bin/sh\nexit 0\n")
        (tmp_path / tool).chmod(0o755)
    return subprocess.run(["bash", str(REPO / "scripts" / "mutation.sh"), target], capture_output=True, text=True,
                          env={**os.environ, "PYTHON": str(tmp_path / "python"), "MUTATION_DIR": str(out), **env})


def test_mutation_script_names_existing_test_files_and_refuses_unknown_targets(tmp_path):
    text = (REPO / "scripts" / "mutation.sh").read_text()
    paths = set(re.findall(r"tests/test_\w+\.py", text))
    assert len(paths) >= 8 and all((REPO / p).is_file() for p in paths)
    out = run_mutation_script(tmp_path, "engine", tmp_path / "out")
    assert out.returncode == 2 and "unknown target 'engine'" in out.stderr


def test_mutation_script_mutates_several_files_of_a_comma_list_in_one_run(tmp_path):
    """``a.py,b.py``: one work folder whose mutmut config mutates exactly those two files and runs
    the results' tests; MUTATION_TESTS replaces the tests, quoted for TOML."""
    out = run_mutation_script(tmp_path, "mr2/results/groups.py,mr2/results/figures/tradeoff.py", tmp_path / "out")
    assert out.returncode == 0, out.stderr
    config = (tmp_path / "out" / "mr2_results_groups_py_mr2_results_figures_tradeoff_py" / "pyproject.toml").read_text()
    assert 'only_mutate = ["mr2/results/groups.py", "mr2/results/figures/tradeoff.py"]' in config
    assert '"tests/test_results.py"' in config and '"tests/test_losses.py"' not in config
    out = run_mutation_script(tmp_path, "mr2/results/statistics.py", tmp_path / "own",
                              MUTATION_TESTS='tests/test_verdicts.py,-k,not report and not "x"')
    assert out.returncode == 0, out.stderr
    config = (tmp_path / "own" / "mr2_results_statistics_py" / "pyproject.toml").read_text()
    assert 'pytest_add_cli_args_test_selection = ["tests/test_verdicts.py", "-k", "not report and not \\"x\\""]' in config


def test_copy_tree_copies_the_files_git_tracks_or_would_track_and_nothing_ignored(tmp_path):
    """The copy mutation.sh and mutation_recheck.py work in: exactly the files of ``git ls-files
    --cached --others --exclude-standard`` that exist, with their content, and no ignored file."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    expected = sorted(n for n in listed if n and (REPO / n).is_file())
    dest = tmp_path / "copy with space"
    subprocess.run(["bash", str(REPO / "scripts" / "copy_tree.sh"), str(dest)], check=True)
    copied = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert copied == expected and "mr2/__init__.py" in copied
    assert (dest / "README.md").read_bytes() == (REPO / "README.md").read_bytes()
    assert subprocess.run(["bash", str(REPO / "scripts" / "copy_tree.sh")], capture_output=True).returncode == 2


def test_copy_tree_copies_a_link_as_a_link_and_refuses_a_dest_inside_the_tree(tmp_path):
    """B25: a link to /etc/hostname was copied as a regular file holding the host's name, and a DEST
    inside the repository took in its own earlier copy (inside/inside). A link is copied as a link,
    and a DEST inside the working tree is refused before anything is made."""
    import shutil

    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "copy_tree.sh", repo / "scripts")
    (repo / "kept.txt").write_text("kept")
    secret = tmp_path / "secret.txt"
    secret.write_text("the host's name")
    (repo / "leak_link").symlink_to(secret)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    script = ["bash", str(repo / "scripts" / "copy_tree.sh")]
    subprocess.run([*script, str(tmp_path / "copy")], check=True)
    assert (tmp_path / "copy" / "kept.txt").read_text() == "kept"
    assert (tmp_path / "copy" / "leak_link").is_symlink() and os.readlink(tmp_path / "copy" / "leak_link") == str(secret)
    for inside in (repo / "inside", repo, repo / "scripts" / ".." / "deep" / "er"):
        res = subprocess.run([*script, str(inside)], capture_output=True, text=True)
        assert res.returncode == 2 and "is inside the working tree" in res.stderr, res.stderr
    assert not (repo / "inside").exists() and not (repo / "deep").exists()


def test_slurm_check_never_deletes_a_folder_it_did_not_make(tmp_path):
    """B23: MR2_SLURM_DIR=<a folder of one's own> had it deleted (precious files, a finished run) before
    any check. A folder holding anything the script did not make is refused, rc 2, untouched; so is a
    name slurm.conf cannot hold. (Stubs stand for SLURM's daemons: nothing is installed or started.)"""
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for daemon in ("slurmctld", "munged", "slurmd", "apt-get"):
        (stubs / daemon).write_text("#!/bin/sh\necho stub >&2\nexit 1\n")
        (stubs / daemon).chmod(0o755)
    victim = tmp_path / "victim"
    (victim / "runs").mkdir(parents=True)
    (victim / "precious.txt").write_text("precious")
    (victim / "runs" / "model.pt").write_bytes(b"weights")
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}"}
    for folder in (victim, tmp_path / "a b"):
        res = subprocess.run(["bash", str(REPO / "scripts" / "slurm_check.sh")], capture_output=True, text=True,
                             env={**env, "MR2_SLURM_DIR": str(folder)})
        assert res.returncode == 2 and res.stderr.startswith("slurm_check: "), res.stderr
        assert "not touching it" in res.stderr or "needs root" in res.stderr or "letters, digits" in res.stderr
    assert (victim / "precious.txt").read_text() == "precious" and (victim / "runs" / "model.pt").read_bytes() == b"weights"
    assert sorted(p.name for p in victim.iterdir()) == ["precious.txt", "runs"] and not (tmp_path / "a b").exists()


def test_slurm_check_compares_models_metrics_figures_and_the_report_not_only_csvs():
    script = (REPO / "scripts" / "slurm_check.sh").read_text()
    compared = script[script.index('find results \\('):].split("| sort")[0]
    for name in ("'*.csv'", "model.pt", "metrics.json", "'*.png'", "'*.pdf'", "report.md", "report_page.html"):
        assert name in compared, name


def test_mutation_recheck_applies_each_survivor_to_a_copy_and_runs_the_tests(tmp_path):
    """With a stub mutmut listing three survivors of tradeoff.py: a changed constant the tests now
    catch (killed), a changed comment (survived) and lines no longer in the source (gone); the
    repository's own file is never touched. Tests that select nothing judge no mutant."""
    source = REPO / "mr2" / "results" / "figures" / "tradeoff.py"
    before = source.read_text(encoding="utf-8")
    diffs = {"m.x_near__mutmut_1": ("NEAR_FACTOR, NEAR_FLOOR = 3.0, 0.25", "NEAR_FACTOR, NEAR_FLOOR = 4.0, 0.25"),
             "m.x_note__mutmut_2": ("AXES = {\"easy\": \"x\", \"hard\": \"y\"}", "AXES = {\"easy\": \"x\", \"hard\": \"y\"}  # x"),
             "m.x_gone__mutmut_3": ("def no_such_function():", "def no_such_function(x):")}
    for name, (old, new) in diffs.items():
        (tmp_path / f"{name}.diff").write_text(
            f"# {name}: survived\n--- mr2/results/figures/tradeoff.py\n+++ mr2/results/figures/tradeoff.py\n"
            f"@@ -1,1 +1,1 @@\n-{old}\n+{new}\n")
    mutmut = tmp_path / "mutmut"
    mutmut.write_text('#!/bin/sh\nif [ "$1" = results ]; then\n'
                      + "".join(f"  echo '    {name}: survived'\n" for name in diffs)
                      + "  echo '    m.x_near__mutmut_9: killed'\n"
                      + f'else cat "{tmp_path}/$2.diff"; fi\n')
    mutmut.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "mutation_recheck.py"), str(work),
                          "tests/test_verdicts.py", "-k", "near_zero_includes"],
                         capture_output=True, text=True, env={**os.environ, "MUTMUT": str(mutmut)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"3 survivors in {work}", "m.x_near__mutmut_1 killed",
                                       "m.x_note__mutmut_2 survived", "m.x_gone__mutmut_3 gone",
                                       "killed 1, survived 1, gone 1"]
    assert source.read_text(encoding="utf-8") == before
    nothing = subprocess.run([sys.executable, str(REPO / "scripts" / "mutation_recheck.py"), str(work),
                              "tests/test_verdicts.py", "-k", "no_test_has_this_name"],
                             capture_output=True, text=True, env={**os.environ, "MUTMUT": str(mutmut)})
    assert nothing.returncode == 1 and "fail or select nothing without a mutant" in nothing.stderr
    assert "killed" not in nothing.stdout  # no mutant judged on tests that never ran
    missing = subprocess.run([sys.executable, str(REPO / "scripts" / "mutation_recheck.py"), str(tmp_path / "nowhere")],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "no work folder" in missing.stderr
    only = subprocess.run([sys.executable, str(REPO / "scripts" / "mutation_recheck.py"), str(work), "--only",
                           "x_(near|gone)_", "tests/test_verdicts.py", "-k", "near_zero_includes"],
                          capture_output=True, text=True, env={**os.environ, "MUTMUT": str(mutmut)})
    assert only.stdout.splitlines() == [f"2 survivors in {work}", "m.x_near__mutmut_1 killed",
                                        "m.x_gone__mutmut_3 gone", "killed 1, survived 0, gone 1"]
    for bad in (["--only"], ["--only", "x_(near"]):
        refused = subprocess.run([sys.executable, str(REPO / "scripts" / "mutation_recheck.py"), str(work), *bad],
                                 capture_output=True, text=True, env={**os.environ, "MUTMUT": str(mutmut)})
        assert refused.returncode == 2 and "--only" in refused.stderr
