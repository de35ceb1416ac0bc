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


def lock_pins():
    """{normalised name: version} of requirements.lock."""
    lines = (ROOT / "requirements.lock").read_text().splitlines()
    return {normalised(line.split("==")[0]): line.split("==")[1].strip() for line in lines if "==" in line}


def normalised(name):
    return name.split(">")[0].split("<")[0].split("=")[0].split("[")[0].strip().lower().replace("_", "-")


def test_per_rule_environments_are_pinned_like_the_lock():
    """workflow/envs/*.yml pin exactly requirements.lock's version of each package, and list only
    packages of requirements.txt; the results one has no torch."""
    pins, every = lock_pins(), {normalised(r) for r in pip_requirements()}
    for name in ("torch", "results"):
        reqs = env_requirements(name)
        assert reqs and all(r.count("==") == 1 for r in reqs), (name, reqs)
        for req in reqs:
            package, version = normalised(req.split("==")[0]), req.split("==")[1]
            assert package in every, f"workflow/envs/{name}.yml: {package} is not in requirements.txt"
            assert pins.get(package) == version, f"workflow/envs/{name}.yml: {req}, the lock pins {pins.get(package)}"
    assert not [r for r in env_requirements("results") if normalised(r) in ("torch", "torchvision")]
    assert "torch" in {normalised(r) for r in env_requirements("torch")}


def test_citation_names_the_release_and_the_papers_authors():
    import datetime
    import re

    import mr2

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["version"] == mr2.__version__
    datetime.date.fromisoformat(str(cff["date-released"]))
    assert re.fullmatch(r"https://[\w.-]+/[\w.-]+/[\w.-]+", cff["repository-code"])
    authors = cff["preferred-citation"]["authors"]
    assert len(authors) == 7 and all(a.get("given-names") and a.get("family-names") for a in authors)


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
