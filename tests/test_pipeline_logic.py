"""The workflow's logic as Python (mr2.pipeline): typed config values, validation with the schemas'
defaults, the checks across keys, the runs of a config and their run configs, the hashes that name
the run folders (pinned: a refactor must not move a finished run), paths, job commands, and the
checkout of a module read from git. No Snakemake run: each call takes the config explicitly."""

import copy
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from mr2.common.tuning import trial_options
from mr2.pipeline import jobs, paths
from mr2.pipeline import runs as plan
from mr2.pipeline.config import (
    CONFIG_SCHEMA,
    PipelineConfigError,
    checked,
    known_methods,
    load_schemas,
    method_option_names,
    sweep_variants,
    typed,
)
from mr2.pipeline.source import checkout

SCHEMAS = load_schemas(REPO / "workflow" / "schemas")
SCHEMA = SCHEMAS[CONFIG_SCHEMA]
#: {config name: {"runs": {"dataset/method/variant": run hash}, "data": {dataset: data hash}}}, computed
#: by the workflow's code before it moved into mr2.pipeline (tuned methods: the tuning chose trial 0)
PINNED = json.loads((Path(__file__).parent / "pinned_run_hashes.json").read_text())


def shipped(name):
    """config/<name>.yaml as the workflow runs it."""
    return checked(yaml.safe_load((REPO / "config" / f"{name}.yaml").read_text()), SCHEMAS)


def smoke(**change):
    raw = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    raw.update(change)
    return checked(raw, SCHEMAS)


def first_trial_chosen(config):
    """A tuning's choice as the pins assume it: every searched method's trial 0."""
    tune = config["tune"]
    methods = {m: trial_options(space, tune["trials"], tune["seed"], m)[0] for m, space in tune["space"].items()}
    return lambda dataset: {"methods": methods}


# ----------------------------------------------------------------------------- hashes: pinned
def data_hash_of(config, key):
    """The data hash a pin names: ``<dataset>``, or ``<dataset>/seed<k>`` where each seed draws its own
    data (`variance.split: true`)."""
    dataset, _, seed = key.partition("/seed")
    return plan.data_hash(config, dataset, int(seed) if seed else None)


def test_every_shipped_config_is_pinned():
    assert set(PINNED) == {p.stem for p in (REPO / "config").glob("*.yaml")}
    assert "config" in PINNED and len(PINNED["config"]["runs"]) == 4  # the embedded default: 4 methods


@pytest.mark.parametrize("name", sorted(PINNED))
def test_run_and_data_hashes_of_the_shipped_configs_are_unchanged(name):
    """A run's folder is named after the first 8 hex digits of SHA-256 of its run config without the seed:
    the same names as before the logic moved into the library, so no finished run is orphaned."""
    config = shipped(name)
    chosen = first_trial_chosen(config) if config.get("tune") else None
    runs = {f"{d}/{m}/{v}": plan.run_hash(config, SCHEMA, d, m, v, chosen)
            for d, m, v in (key.split("/") for key in PINNED[name]["runs"])}
    assert runs == PINNED[name]["runs"]
    assert {key: data_hash_of(config, key) for key in PINNED[name]["data"]} == PINNED[name]["data"]
    listed = {f"{r['dataset']}/{r['method']}/{r['variant']}" for r in plan.runs(config)}
    assert listed <= set(PINNED[name]["runs"])  # every tabled run of the config is pinned


@pytest.mark.parametrize("baselines, twin", [("tuned-baselines", "tuned-fashion-mnist"),
                                             ("tuned-dro", "tuned-fashion-mnist"),
                                             ("tuned-baselines-mnist1d", "tuned-mnist1d")])
def test_a_baselines_config_reuses_its_twins_erm_and_mr2_runs(baselines, twin):
    """The baselines' configs say: copy the twin's runs/ and data/ and its ERM and MR² runs are reused.
    That holds when the same search draws the same trials and the same choice names the same folders."""
    a, b = shipped(baselines), shipped(twin)
    trials = [trial_options(c["tune"]["space"]["mr2"], c["tune"]["trials"], c["tune"]["seed"], "mr2") for c in (a, b)]
    assert trials[0] == trials[1]
    assert a["convergence"] == b["convergence"]
    checked_too = [f"{d}.x{a['convergence']['factor']}" for d in a["datasets"]]
    for options in trials[0]:
        chosen = lambda dataset, options=options: {"methods": {"mr2": options}}  # noqa: E731
        for dataset in [*a["datasets"], *checked_too]:
            assert plan.data_hash(a, dataset) == plan.data_hash(b, dataset)
            for method in ("erm", "mr2"):
                assert plan.run_hash(a, SCHEMA, dataset, method, "default", chosen) == \
                    plan.run_hash(b, SCHEMA, dataset, method, "default", chosen), (dataset, method, options)


def test_the_spread_fed_config_reuses_the_controls_runs_and_trains_its_own_mr2():
    """config/tuned-controls-spread.yaml says its ERM, tuned ERM and temperature are config/tuned-controls.yaml's
    runs (the same folders, trials and checks included) and only MR², fed the spread, trains anew."""
    a, b = shipped("tuned-controls-spread"), shipped("tuned-controls")
    assert a["tune"]["space"] == b["tune"]["space"] and a["convergence"] == b["convergence"]
    chosen = first_trial_chosen(b)
    for dataset in ("fashion_mnist", "fashion_mnist.x4"):
        for method in ("erm", "erm_tuned", "ce_temperature", "mr2"):
            variants = ["default"] + ([f"trial{i}" for i in range(8)] if method != "erm" and ".x" not in dataset else [])
            for variant in variants:
                same = (plan.run_hash(a, SCHEMA, dataset, method, variant, chosen)
                        == plan.run_hash(b, SCHEMA, dataset, method, variant, chosen))
                assert same == (method != "mr2"), (dataset, method, variant)


def test_the_hash_ignores_the_seed_and_follows_every_setting():
    config = smoke()
    a = plan.run_config(config, SCHEMA, "fashion_mnist", "mr2", "default", 0)
    b = plan.run_config(config, SCHEMA, "fashion_mnist", "mr2", "default", 7)
    assert a["seed"] == 0 and b["seed"] == 7
    same = plan.run_hash(config, SCHEMA, "fashion_mnist", "mr2", "default")
    changed = smoke(method_options={"mr2": {"lam": 0.3}})
    assert plan.run_hash(changed, SCHEMA, "fashion_mnist", "mr2", "default") != same
    assert plan.run_hash(changed, SCHEMA, "fashion_mnist", "erm", "default") == \
        plan.run_hash(config, SCHEMA, "fashion_mnist", "erm", "default")
    assert plan.short_hash({"b": 1, "a": [1, 2]}) == plan.short_hash({"a": [1, 2], "b": 1})


# ----------------------------------------------------------------------------- types and validation
@pytest.mark.parametrize("raw, value", [
    ("0.3", 0.3), ("1e-2", 0.01), ("5e-4", 0.0005), ("-3", -3), ("true", True), ("False", False),
    ("null", None), ("~", None), ("erm", "erm"), ("c_bar=0.5", "c_bar=0.5"), ("1.0.0", "1.0.0"),
])
def test_typed_reads_values_as_yaml_1_2(raw, value):
    got = typed({"k": [raw]})["k"][0]
    assert got == value and type(got) is type(value)


def test_validation_fills_the_schemas_defaults():
    config = checked({"datasets": {"fm": {"data": {"name": "fashion_mnist"}}}, "methods": ["erm", "mr2"],
                      "seeds": [0]}, SCHEMAS)
    assert config["reference"] == "erm" and config["sweeps"] == {"method": "mr2"}
    assert config["output_root"] == "results" and config["threads"] == 1 and config["gpus"] == 0
    assert config["run"] == {} and config["method_options"] == {} and config["theory"] == {}


def test_validation_reads_nested_strings_and_amp_off():
    config = smoke(method_options={"mr2": {"lam": "0.3"}}, run={"amp": False})
    assert config["method_options"]["mr2"]["lam"] == 0.3 and config["run"]["amp"] == "off"


def test_the_schemas_resolve_each_other_from_any_folder(tmp_path, monkeypatch):
    """run.schema.yaml is found by its name beside config.schema.yaml, wherever the folder is and
    whatever the working directory (a deployed workflow's schemas are not where it runs)."""
    folder = tmp_path / "elsewhere"
    shutil.copytree(REPO / "workflow" / "schemas", folder)
    monkeypatch.chdir(tmp_path)
    schemas = load_schemas(folder)
    raw = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    raw["datasets"]["fashion_mnist"]["train"]["epoch"] = 3  # checked by run.schema.yaml's train
    with pytest.raises(PipelineConfigError, match=r"config key 'datasets\.fashion_mnist\.train'.*'epoch'"):
        checked(raw, schemas)
    with pytest.raises(FileNotFoundError):
        load_schemas(tmp_path)


@pytest.mark.parametrize("change, message", [
    ({"methods": ["erm", "mr3"]}, r"config key 'methods\.1'"),
    ({"method_options": {"mr2": {"lam": -1.0}}}, r"config key 'method_options\.mr2\.lam'"),
    ({"device": "cdua"}, r"config key 'device'"),
    ({"epochs": 3}, r"config: .*'epochs' was unexpected"),
    ({"reference": "mr2_uniform", "methods": ["erm", "mr2"]}, r"config key 'reference'"),
    ({"method_options": {"focal": {"gamma": 1.0}}}, r"config key 'method_options\.focal'"),
    ({"method_model": {"ldam": {"head": "cosine"}}}, r"config key 'method_model\.ldam'"),
    ({"sweeps": {"method": "mr2", "gamma": [1.0]}}, r"config key 'sweeps\.gamma'"),
    ({"gpus": 0, "runs_per_gpu": 4}, r"config key 'runs_per_gpu'"),
    ({"seeds": [0, 1.0]}, r"config key 'seeds'"),
    ({"tune": {"space": {"mr2": {"lam": [0.1, 1.0]}}, "seeds": [0]}}, r"config key 'tune\.seeds'"),
    ({"tune": {"space": {"erm": {"lam": [0.1, 1.0]}}, "seeds": [9]}}, r"config key 'tune\.space\.erm'"),
    ({"tune": {"space": {"mr2": {"gamma": [0.1, 1.0]}}, "seeds": [9]}}, r"config key 'tune\.space\.mr2\.gamma'"),
    ({"tune": {"space": {"mr2": {"lam": [1.0, 0.1]}}, "seeds": [9]}}, r"config key 'tune\.space\.mr2\.lam'"),
    ({"tune": {"space": {"mr2": {"lam": [0.1, 1.0]}}, "seeds": [9], "follow": {"mr2_uniform": "focal"}}},
     r"config key 'tune\.follow\.mr2_uniform'"),
    ({"convergence": {"factor": 2, "seeds": [0]},
      "datasets": {"a": {"data": {"name": "digits"}, "train": {"epochs": 1}}, "a.x2": {"data": {"name": "digits"}}}},
     r"config key 'datasets\.a\.x2'"),
    ({"convergence": {"factor": 2, "seeds": [0]}, "datasets": {"a": {"data": {"name": "digits"}}}},
     r"config key 'datasets\.a\.train\.epochs'"),
])
def test_a_bad_config_names_its_key(change, message):
    with pytest.raises(ValueError, match=message):  # PipelineConfigError, or trial_options' ValueError
        smoke(**change)


def test_options_and_methods_come_from_the_schema():
    assert method_option_names(SCHEMA, "mr2_no_rep") == {"c_bar", "p", "momentum", "statistic"}
    assert {"lam", "c_bar"} <= method_option_names(SCHEMA, "mr2") and method_option_names(SCHEMA, "erm") == set()
    assert {"erm", "mr2", "jtt", "lff"} <= set(known_methods(SCHEMA))


# ----------------------------------------------------------------------------- runs and run configs
def test_runs_are_every_method_and_sweep_variant_with_every_seed():
    config = smoke()
    runs = plan.runs(config)
    assert len(runs) == (4 + 1) * 2 and sweep_variants(config) == {"c_bar=2.0": ("c_bar", 2.0)}
    assert {(r["method"], r["variant"]) for r in runs} == {
        ("erm", "default"), ("mr2", "default"), ("mr2_uniform", "default"), ("mr2_no_rep", "default"),
        ("mr2", "c_bar=2.0")}
    with_checks = smoke(convergence={"factor": 3, "seeds": [5]})
    extra = [r for r in plan.runs(with_checks) if r not in runs]
    assert len(extra) == 4 and {r["dataset"] for r in extra} == {"fashion_mnist.x3"} and {r["seed"] for r in extra} == {5}


def test_a_sweep_variant_sets_its_option_and_tags_it():
    cfg = plan.run_config(smoke(), SCHEMA, "fashion_mnist", "mr2", "c_bar=2.0", "1")
    assert cfg["method"] == {"name": "mr2", "options": {"c_bar": 2.0}} and cfg["seed"] == 1
    assert cfg["tags"] == {"variant": "c_bar=2.0", "dataset_key": "fashion_mnist", "sweep": "c_bar"}
    assert cfg["train"]["epochs"] == 3 and cfg["model"]["name"] == "small_cnn" and cfg["threads"] == 1


def test_the_run_section_the_dataset_block_and_the_method_model_merge_in_that_order():
    config = smoke(run={"train": {"epochs": 9, "momentum": 0.5}}, method_model={"erm": {"head": "cosine"}})
    cfg = plan.run_config(config, SCHEMA, "fashion_mnist", "erm", "default", 0)
    assert cfg["train"]["epochs"] == 3 and cfg["train"]["momentum"] == 0.5  # the block wins, the rest stays
    assert cfg["model"] == {"name": "small_cnn", "head": "cosine"}


def test_an_unknown_variant_dataset_or_trial_is_refused_naming_it():
    config = smoke()
    with pytest.raises(PipelineConfigError, match="'lam=9'.*sweeps"):
        plan.run_config(config, SCHEMA, "fashion_mnist", "mr2", "lam=9", 0)
    with pytest.raises(PipelineConfigError, match="'cifar100' is not in config key 'datasets'"):
        plan.run_config(config, SCHEMA, "cifar100", "mr2", "default", 0)
    tuned = smoke(tune={"space": {"mr2": {"lam": [0.1, 1.0]}}, "seeds": [9], "trials": 2})
    with pytest.raises(PipelineConfigError, match="trial5.*trials 0..1"):
        plan.run_config(tuned, SCHEMA, "fashion_mnist", "mr2", "trial5", 9)


def test_trials_take_their_drawn_options_and_tuned_runs_the_choice():
    config = smoke(tune={"space": {"mr2": {"lam": [0.1, 1.0], "c_bar": [0.5, 2.0]}}, "seeds": [9], "trials": 3,
                         "follow": {"mr2_no_rep": "mr2"}}, sweeps={"method": "mr2"})
    drawn = trial_options(config["tune"]["space"]["mr2"], 3, 0, "mr2")
    trial = plan.run_config(config, SCHEMA, "fashion_mnist", "mr2", "trial2", 9)
    assert trial["method"]["options"] == drawn[2] and trial["tags"]["trial"] == 2
    assert trial["tags"]["searched"] == ["c_bar", "lam"]
    assert len(plan.trial_runs(config, "fashion_mnist")) == 1 + 3  # the reference and 3 trials, one seed each
    chosen = lambda dataset: {"methods": {"mr2": {"lam": 0.42, "c_bar": 1.5}}}  # noqa: E731
    final = plan.run_config(config, SCHEMA, "fashion_mnist", "mr2", "default", 0, chosen)
    follower = plan.run_config(config, SCHEMA, "fashion_mnist", "mr2_no_rep", "default", 0, chosen)
    assert final["method"]["options"] == {"lam": 0.42, "c_bar": 1.5} and final["tags"]["tuned"] is True
    assert follower["method"]["options"] == {"c_bar": 1.5}  # mr2_no_rep takes no lam
    assert "tuned" not in plan.run_config(config, SCHEMA, "fashion_mnist", "erm", "default", 0, chosen)["tags"]
    with pytest.raises(PipelineConfigError, match="tuning's choice"):
        plan.run_config(config, SCHEMA, "fashion_mnist", "mr2", "default", 0)


def test_a_convergence_check_trains_factor_times_the_epochs_with_its_datasets_choice():
    config = smoke(convergence={"factor": 4, "seeds": [0]},
                   tune={"space": {"mr2": {"lam": [0.1, 1.0]}}, "seeds": [9], "trials": 2})
    asked = []
    chosen = lambda dataset: asked.append(dataset) or {"methods": {"mr2": {"lam": 0.2}}}  # noqa: E731
    cfg = plan.run_config(config, SCHEMA, "fashion_mnist.x4", "mr2", "default", 0, chosen)
    assert cfg["train"]["epochs"] == 12 and cfg["tags"]["convergence_of"] == "fashion_mnist"
    assert cfg["method"]["options"] == {"lam": 0.2} and asked == ["fashion_mnist"]
    assert plan.data_settings(config, "fashion_mnist.x4") == plan.data_settings(config, "fashion_mnist")


def test_inputs_of_the_aggregate_and_tune_steps_and_the_run_folders_table():
    config = smoke(output_root="out/x")
    folder = lambda dataset, method, variant, seed: plan.run_folder(  # noqa: E731
        config, plan.run_hash(config, SCHEMA, dataset, method, variant), dataset, method, variant, seed)
    inputs = plan.result_inputs(config, folder)
    assert len(inputs) == 10 * 5 and all(f.startswith("out/x/runs/fashion_mnist/") for f in inputs)
    assert paths.run_dirs_of(inputs) == [folder(**r) for r in plan.runs(config)]
    table = plan.run_folders_table(config, folder).splitlines()
    assert table[0] == "dataset\tmethod\tvariant\tseed\tfolder" and len(table) == 11
    erm = plan.run_hash(config, SCHEMA, "fashion_mnist", "erm", "default")
    assert table[1] == f"fashion_mnist\term\tdefault\t0\truns/fashion_mnist/erm/default/{erm}/seed0"
    tuned = smoke(tune={"space": {"mr2": {"lam": [0.1, 1.0]}}, "seeds": [9], "trials": 2})
    trial_files = plan.trial_inputs(tuned, "fashion_mnist", lambda **r: "/".join(map(str, r.values())))
    assert trial_files[:3] == ["fashion_mnist/erm/default/9/config.yaml", "fashion_mnist/erm/default/9/eval_val/per_class.csv",
                               "fashion_mnist/erm/default/9/eval_val/metrics.json"]
    assert len(trial_files) == 3 * 3


def test_a_target_of_other_settings_is_refused_naming_its_folder():
    with pytest.raises(PipelineConfigError, match="'deadbeef'.*fashion_mnist/mr2/default.*'12345678'"):
        plan.check_run_hash("fashion_mnist", "mr2", "default", "deadbeef", "12345678")
    plan.check_run_hash("fashion_mnist", "mr2", "default", "12345678", "12345678")
    with pytest.raises(PipelineConfigError, match="prepared data 'deadbeef'"):
        plan.check_data_hash("fashion_mnist", "deadbeef", "12345678")


def test_the_gpu_locks_are_beside_the_output_root_a_module_prefix_moved():
    run_dir = paths.patterns("results")["RUN_DIR"]
    wildcards = {"dataset": "d", "method": "mr2", "variant": "default", "run_hash": "0123abcd", "seed": "0"}
    moved = "sub/results/runs/d/mr2/default/0123abcd/seed0/model.pt"
    assert paths.locks_of("results", moved, f"{run_dir}/model.pt", wildcards) == "sub/results/.gpu_locks"
    with pytest.raises(PipelineConfigError, match="is not"):
        paths.locks_of("results", "sub/results/runs/other/model.pt", f"{run_dir}/model.pt", wildcards)


def test_model_jobs_declare_gpus_and_launch_one_process_or_torchrun():
    cpu = {"gpus": 0, "runs_per_gpu": 1, "device": "cpu"}
    assert jobs.gpu_resources(cpu) == {} and jobs.launcher(cpu, "L") == ["python", "-m", "mr2"]
    assert jobs.device_args(cpu, "L") == ["--device", "cpu"]
    one = {"gpus": 1, "runs_per_gpu": 1, "device": "cuda"}
    assert jobs.gpu_resources(one) == {"gpu": 1} and jobs.device_args(one, "L") == [
        "--device", "cuda", "--gpu-slots", "1", "--lock-dir", "L"]
    shared = {"gpus": 1, "runs_per_gpu": 4, "device": "auto"}
    assert jobs.gpu_resources(shared) == jobs.gpu_resources(shared, one_process=True) == {"gpu": 1, "gpu_slot": 1}
    assert jobs.device_args(shared, "L")[3] == "4"
    two = {"gpus": 2, "runs_per_gpu": 1, "device": "cuda"}
    assert jobs.gpu_resources(two) == {"gpu": 2} and jobs.gpu_resources(two, one_process=True) == {"gpu": 1}
    assert " ".join(jobs.launcher(two, "L")) == ("python -m mr2 on-gpus 2 --lock-dir L -- python -m "
                                                 "torch.distributed.run --standalone --nproc_per_node=2 -m mr2")
    assert jobs.device_args(two, "L") == ["--device", "cuda"]  # torchrun claims its GPUs in the launcher
    assert "--gpu-slots" in jobs.device_args(two, "L", one_process=True)


def test_jtt_runs_read_their_error_set_and_theory_takes_its_options():
    wildcards = {"dataset": "d", "method": "jtt", "variant": "default", "run_hash": "0123abcd", "seed": "1"}
    assert jobs.upsample_input({"output_root": "o"}, wildcards) == "o/jtt/d/default/0123abcd/seed1/errors.csv"
    assert jobs.upsample_input({"output_root": "o"}, {**wildcards, "method": "erm"}) == []
    assert jobs.jtt_errors_args("jtt", "e.csv") == ["--jtt-errors", "e.csv"] and jobs.jtt_errors_args("erm", []) == []
    assert jobs.theory_args({"theory": {"norm": "frobenius", "delta": 0.1}}) == ["--delta", "0.1", "--norm", "frobenius"]


# ----------------------------------------------------------------------------- a module read from git
def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_checkout_writes_the_tree_of_a_commit_once(tmp_path):
    repo = tmp_path / "repo"
    (repo / "mr2").mkdir(parents=True)
    (repo / "mr2" / "x.py").write_text("A = 1\n")
    (repo / "notes.txt").write_text("not part of the checkout\n")
    git(repo.parent, "init", "-q", str(repo))
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    git(repo, "tag", "v1")
    first = checkout(repo, "v1", tmp_path / "cache")
    assert first == (tmp_path / "cache" / git(repo, "rev-parse", "HEAD")).resolve()
    assert (first / "mr2" / "x.py").read_text() == "A = 1\n" and not (first / "notes.txt").exists()
    (repo / "mr2" / "x.py").write_text("A = 2\n")  # the working tree is not the commit
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "two")
    assert checkout(repo, "v1", tmp_path / "cache") == first and (first / "mr2" / "x.py").read_text() == "A = 1\n"
    second = checkout(repo, "HEAD", tmp_path / "cache")
    assert second != first and (second / "mr2" / "x.py").read_text() == "A = 2\n"
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted([first.name, second.name])  # no scratch left
    with pytest.raises(ValueError, match="names no commit"):
        checkout(repo, "v9", tmp_path / "cache")


def test_run_configs_never_alias_the_config():
    config = smoke()
    before = copy.deepcopy(config)
    plan.run_config(config, SCHEMA, "fashion_mnist", "mr2", "c_bar=2.0", 0)["train"]["epochs"] = 99
    plan.data_settings(config, "fashion_mnist")["data"]["name"] = "x"
    assert config == before


def test_an_output_root_that_is_the_file_systems_root_or_a_file_is_refused(tmp_path):
    from mr2.pipeline.config import PipelineConfigError

    for root in ("/", "//", "/./"):
        with pytest.raises(PipelineConfigError, match="config key 'output_root'.*file system's root"):
            smoke(output_root=root)
    (tmp_path / "f").write_text("x")
    with pytest.raises(PipelineConfigError, match="config key 'output_root'.*existing file"):
        smoke(output_root=str(tmp_path / "f"))
    assert smoke(output_root=str(tmp_path / "new"))["output_root"] == str(tmp_path / "new")


def test_a_method_with_its_own_epochs_trains_them_in_its_runs_trials_and_check_and_moves_no_other_run():
    """datasets.<d>.method_epochs.dro: 40 -> DRO's final runs and trials train 40 epochs and its check
    160; ERM's and MR²'s runs (20 and 80 epochs) keep their folders."""
    raw = yaml.safe_load((REPO / "config" / "tuned-baselines.yaml").read_text())
    before = checked(copy.deepcopy(raw), SCHEMAS)
    raw["datasets"]["fashion_mnist"]["method_epochs"] = {"dro": 40}
    after = checked(raw, SCHEMAS)
    chosen = first_trial_chosen(after)
    epochs = lambda c, d, m, v="default": plan.run_config(c, SCHEMA, d, m, v, 0, chosen)["train"]["epochs"]  # noqa: E731
    assert [epochs(after, "fashion_mnist", "dro"), epochs(after, "fashion_mnist", "dro", "trial3"),
            epochs(after, "fashion_mnist.x4", "dro")] == [40, 40, 160]
    assert [epochs(after, "fashion_mnist", "erm"), epochs(after, "fashion_mnist.x4", "mr2")] == [20, 80]
    for d, m in [("fashion_mnist", "erm"), ("fashion_mnist", "mr2"), ("fashion_mnist.x4", "focal")]:
        assert plan.run_hash(after, SCHEMA, d, m, "default", chosen) == plan.run_hash(before, SCHEMA, d, m, "default", chosen)
    assert plan.run_hash(after, SCHEMA, "fashion_mnist", "dro", "default", chosen) != \
        plan.run_hash(before, SCHEMA, "fashion_mnist", "dro", "default", chosen)
    raw["datasets"]["fashion_mnist"]["method_epochs"] = {"jtt": 40}
    with pytest.raises(PipelineConfigError, match=r"datasets\.fashion_mnist\.method_epochs\.jtt.*not in 'methods'"):
        checked(raw, SCHEMAS)
    raw["datasets"]["fashion_mnist"]["method_epochs"] = {"dro": 0}
    with pytest.raises(PipelineConfigError, match=r"datasets\.fashion_mnist\.method_epochs\.dro"):
        checked(raw, SCHEMAS)
