"""environment.yml (conda users) must list exactly the pip requirements of requirements.txt."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def pip_requirements():
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    return sorted(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def test_environment_yml_matches_requirements():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    assert any(str(d).startswith("python=3.1") for d in deps), "environment.yml must pin python 3.11+"
    pip_section = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    conda_pip = sorted(r for r in pip_section if r != "-e .")
    assert conda_pip == pip_requirements(), "environment.yml's pip section drifted from requirements.txt"


def test_lock_pins_every_requirement():
    lock = (ROOT / "requirements.lock").read_text().lower().splitlines()
    pinned = {line.split("==")[0].replace("_", "-") for line in lock if "==" in line}
    for req in pip_requirements():
        name = req.split(">")[0].split("<")[0].split("=")[0].split("[")[0].strip().lower().replace("_", "-")
        assert name in pinned, f"requirements.lock does not pin {name}"


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in readme and "bash scripts/test.sh" in ci


def env_requirements(name):
    env = yaml.safe_load((ROOT / "workflow" / "envs" / f"{name}.yml").read_text())
    return sorted(next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d))


def test_per_rule_environments_are_slices_of_the_requirements():
    """workflow/envs/*.yml list requirements.txt's own lines (same ranges), the results one without torch."""
    every = set(pip_requirements())
    for name in ("torch", "results"):
        reqs = env_requirements(name)
        assert reqs and set(reqs) <= every, (name, set(reqs) - every)
    assert not [r for r in env_requirements("results") if r.startswith(("torch", "torchvision"))]
    assert any(r.startswith("torch>=") for r in env_requirements("torch"))


def test_every_rule_that_runs_python_names_its_environment():
    import re

    for path in (ROOT / "workflow" / "rules").glob("*.smk"):
        for rule in re.split(r"\n(?=rule )", path.read_text())[1:]:
            name = rule.split(":")[0].split()[1]
            if "python -m" in rule:
                assert re.search(r"conda:\s+ENV_(TORCH|RESULTS)", rule), f"rule {name} ({path.name}) has no conda env"
            if "python -m theory" in rule:
                assert "ENV_TORCH" in rule, f"rule {name} needs torch (theory.bound uses the method layer)"
            elif re.search(r"python -m mr2 (aggregate|table|figures|analysis|report)", rule):
                assert "ENV_RESULTS" in rule, f"rule {name} reads tables only: the light environment"
