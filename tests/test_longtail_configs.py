"""The configs of the positive controls and the second dataset (issues 23 and 24): each is a valid
pipeline config whose dry run lists every run, whose data blocks and runs the engine resolves
(without data), and LDAM runs as its authors train it (normalised last layer, DRW at 80 % of the
epochs) through ``method_model`` and ``method_options``."""

from pathlib import Path

import pytest
import yaml

from conftest import run_folders, run_snakemake, workdir_with_configs
from mr2.engine import config as config_mod
from mr2.engine.data import resolve_config
from mr2.method.losses.factory import check_options

ROOT = Path(__file__).resolve().parents[1]
NEW_CONFIGS = ["longtail.yaml", "longtail-convergence.yaml", "cifar100-lt.yaml", "planted.yaml", "mnist1d.yaml", "mnist1d-40ep.yaml", "mnist1d-convergence.yaml"]


def load(name):
    return yaml.safe_load((ROOT / "config" / name).read_text())


@pytest.mark.slow
@pytest.mark.parametrize("name", NEW_CONFIGS)
def test_config_dry_run_lists_every_run(tmp_path, name):
    import re

    cfg = load(name)
    res = run_snakemake(workdir_with_configs(tmp_path / "wf"), "-n", "--configfile", f"config/{name}")
    stats = dict(re.findall(r"(?m)^(\w+)\s+(\d+)$", res.stdout))
    # a run per dataset, method and seed, and per dataset, swept option value and seed
    swept = sum(len(v) for k, v in cfg.get("sweeps", {}).items() if k != "method")
    assert int(stats["train"]) == len(cfg["datasets"]) * (len(cfg["methods"]) + swept) * len(cfg["seeds"])
    assert int(stats["prepare"]) == len(cfg["datasets"]) and len(cfg["seeds"]) >= 3


@pytest.mark.parametrize("name", NEW_CONFIGS)
def test_config_resolves_in_the_engine(name):
    """Every dataset block's data section and every run's settings pass the engine's checks."""
    cfg = load(name)
    for key, block in cfg["datasets"].items():
        resolve_config(block["data"])
        for method in cfg["methods"]:
            model = {**block.get("model", {}), **cfg.get("method_model", {}).get(method, {})}
            run = {"data": block["data"], "model": model, "train": block.get("train", {}),
                   "method": {"name": method, "options": cfg.get("method_options", {}).get(method, {})}}
            resolved = config_mod.validate(config_mod.deep_merge(config_mod.DEFAULTS, run))
            check_options(method, resolved["method"]["options"])


@pytest.mark.parametrize("name", ["longtail.yaml", "cifar100-lt.yaml"])
def test_ldam_is_trained_as_its_authors_train_it(name):
    cfg = load(name)
    (block,) = cfg["datasets"].values()
    assert block["data"]["imbalance"]["ratio"] == 100
    assert {"erm", "logit_adjust", "ldam", "focal", "mr2", "mr2_release"} <= set(cfg["methods"])
    assert cfg["method_model"]["ldam"] == {"head": "cosine", "cosine_scale": 1.0}
    assert "s" not in cfg["method_options"]["ldam"]  # the loss's s = 30 on cosines
    # DRW from 80 % of the epochs (LDAM-DRW: epoch 160 of 200)
    assert cfg["method_options"]["ldam"]["drw_epoch"] == int(0.8 * block["train"]["epochs"])


@pytest.mark.slow
def test_method_model_reaches_only_its_methods_run_config(tmp_path):
    workdir = workdir_with_configs(tmp_path / "wf")
    folders = run_folders(workdir, "--configfile", "config/longtail.yaml")
    targets = [f"{folders['fashion_mnist_lt', m, 'default', 0]}/run.yaml" for m in ("ldam", "erm")]
    run_snakemake(workdir, *targets, "--configfile", "config/longtail.yaml")
    ldam, erm = (yaml.safe_load((workdir / t).read_text()) for t in targets)
    assert ldam["model"]["head"] == "cosine" and ldam["model"]["cosine_scale"] == 1.0
    assert erm["model"]["head"] == "linear"
    assert ldam["data"]["imbalance"]["ratio"] == 100 == erm["data"]["imbalance"]["ratio"]
    assert ldam["method"]["options"]["drw_epoch"] == load("longtail.yaml")["method_options"]["ldam"]["drw_epoch"]


@pytest.mark.slow
def test_method_model_of_a_method_not_run_is_refused(tmp_path):
    workdir = workdir_with_configs(tmp_path / "wf")
    cfg = load("planted.yaml")
    cfg["method_model"] = {"ldam": {"head": "cosine"}}
    (workdir / "config" / "bad.yaml").write_text(yaml.safe_dump(cfg))
    res = run_snakemake(workdir, "-n", "--configfile", "config/bad.yaml", check=False)
    assert res.returncode != 0 and "method_model.ldam" in res.stdout + res.stderr
