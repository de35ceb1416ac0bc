"""The equally tuned controls and what they need: ce_temperature (cross-entropy of z/τ) against MR²'s
own loss and against torch's cross-entropy, the 'claim' selection rule at its edges, a searched
training recipe (``train.<key>`` in ``tune.space``), ``variance.split`` (each seed its own data draw),
``convergence.method_seeds``, the declared primary test, and the CPU and kernel variables every run
records and a resume compares."""

import copy
import hashlib
import json

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
import yaml

from conftest import REPO
from mr2.common.tuning import option_column, trial_options
from mr2.method.losses import build_loss
from mr2.pipeline import runs as plan
from mr2.pipeline.config import CONFIG_SCHEMA, PipelineConfigError, checked, load_schemas
from mr2.results import tuning as T

from test_pipeline_logic import first_trial_chosen

SCHEMAS = load_schemas(REPO / "workflow" / "schemas")
SCHEMA = SCHEMAS[CONFIG_SCHEMA]
TAUS = [0.05, 0.3, 1.0, 1.7, 4.0]


def controls(**change):
    """config/tuned-controls.yaml as the workflow runs it, top-level keys replaced by ``change``."""
    raw = yaml.safe_load((REPO / "config" / "tuned-controls.yaml").read_text())
    raw.update(copy.deepcopy(change))
    return checked(raw, SCHEMAS)


# ----------------------------------------------------------------------------- ce_temperature
def batch(dtype, seed=0, k=7, b=13, d=4):
    g = torch.Generator().manual_seed(seed)
    y = torch.cat([torch.arange(k), torch.randint(0, k, (b - k,), generator=g)])
    z = (torch.randn(b, k, generator=g, dtype=torch.float64) * 3).to(dtype)
    return z, torch.randn(b, d, generator=g), y


def value_and_grad(loss, z, features, y):
    z = z.clone().requires_grad_()
    total = loss(z, features, y).total
    return total.detach(), torch.autograd.grad(total, z)[0]


@pytest.mark.parametrize("tau", TAUS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ce_temperature_is_mr2_uniform_without_its_representation_term_to_the_bit(tau, dtype):
    """ℓ_τ = mr2_uniform with λ = 0 and c̄ = τ: the same value and the same gradient, bit for bit."""
    z, features, y = batch(dtype)
    temperature = build_loss("ce_temperature", 7, 4, tau=tau).train()
    uniform = build_loss("mr2_uniform", 7, 4, lam=0.0, c_bar=tau).train()
    value, grad = value_and_grad(temperature, z, features, y)
    value_u, grad_u = value_and_grad(uniform, z, features, y)
    assert value.dtype == dtype and torch.equal(value, value_u) and torch.equal(grad, grad_u)


@pytest.mark.parametrize("tau", TAUS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ce_temperature_is_torchs_cross_entropy_of_the_scaled_logits(tau, dtype):
    z, features, y = batch(dtype, seed=1)
    value, grad = value_and_grad(build_loss("ce_temperature", 7, 4, tau=tau), z, features, y)
    zr = z.clone().requires_grad_()
    reference = F.cross_entropy(zr / tau, y)
    torch.testing.assert_close(value, reference.detach())  # dtype-scaled tolerances: a few ulps
    torch.testing.assert_close(grad, torch.autograd.grad(reference, zr)[0])
    if tau != 1.0:  # the temperature does something: τ = 1 would be another loss
        assert not torch.allclose(value, F.cross_entropy(z, y))


@pytest.mark.parametrize("tau, message", [(0.0, r"tau must be > 0 .*got tau=0\.0"), (-0.5, r"tau must be > 0"),
                                          (float("nan"), r"option 'tau' must be a finite number")])
def test_a_temperature_that_is_not_positive_is_refused_naming_tau(tau, message):
    with pytest.raises(ValueError, match=rf"^(ce_temperature|method 'ce_temperature'): .*{message}"):
        build_loss("ce_temperature", 3, 2, tau=tau)


def test_ce_temperature_defaults_to_plain_cross_entropy():
    z, features, y = batch(torch.float64, seed=2)
    value, _ = value_and_grad(build_loss("ce_temperature", 7, 4), z, features, y)
    torch.testing.assert_close(value, F.cross_entropy(z, y))


def test_ce_temperature_runs_on_the_device_of_its_logits_and_saves_no_margins():
    """On the meta device (no data, any machine): every tensor the loss makes follows the logits."""
    z, features, y = batch(torch.float32, seed=3)
    loss = build_loss("ce_temperature", 7, 4, tau=0.5)
    assert dict(loss.state_dict()) == {}  # nothing but τ, which the run's config holds
    out = loss.to("meta")(z.to("meta"), features.to("meta"), y.to("meta"))
    assert out.total.device.type == "meta" and out.parts["ce"].device.type == "meta"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_ce_temperature_on_cuda_equals_its_cpu_value():
    z, features, y = batch(torch.float64, seed=4)
    cpu_value, cpu_grad = value_and_grad(build_loss("ce_temperature", 7, 4, tau=0.3), z, features, y)
    loss = build_loss("ce_temperature", 7, 4, tau=0.3).to("cuda")
    value, grad = value_and_grad(loss, z.cuda(), features.cuda(), y.cuda())
    assert value.device.type == "cuda"
    torch.testing.assert_close(value.cpu(), cpu_value)
    torch.testing.assert_close(grad.cpu(), cpu_grad)


# ----------------------------------------------------------------------------- the claim rule
REFERENCE_EASY = pd.Series({"d": 90.0})


def scored(rows):
    """Trials of mr2 on dataset d: (trial, easy, hard, all)."""
    return pd.DataFrame([{"dataset": "d", "method": "mr2", "variant": f"trial{i}", "trial": i,
                          "options": json.dumps({"c_bar": 0.5 + i}), "easy": e, "hard": h, "all": a}
                         for i, e, h, a in rows])


def picked(trials, column="chosen"):
    return trials.loc[trials[column], "trial"].tolist()


def test_the_claim_rule_admits_a_trial_exactly_at_the_edge_and_not_one_just_below():
    below = float(np.nextafter(89.0, 0.0))  # the largest float below 90 - 1
    trials = T.choose(scored([(0, 89.0, 70.0, 80.0), (1, below, 85.0, 90.0), (2, 95.0, 60.0, 99.0)]),
                      "claim", REFERENCE_EASY, 1.0)
    assert trials["admitted"].tolist() == [True, False, True]
    assert picked(trials) == [0]  # the best hard group of the admitted, though trial 1's is better
    assert picked(trials, "chosen_hard") == [1] and picked(trials, "chosen_all") == [2]
    assert picked(trials, "chosen_claim") == [0]
    # another effect of interest moves the edge: 0.5 points admits only trial 2
    assert picked(T.choose(scored([(0, 89.0, 70.0, 80.0), (2, 95.0, 60.0, 99.0)]), "claim", REFERENCE_EASY, 0.5)) == [2]


def test_without_an_admitted_trial_the_claim_rule_picks_the_best_of_all_classes():
    trials = T.choose(scored([(0, 80.0, 90.0, 85.0), (1, 70.0, 60.0, 88.0), (2, 88.9, 75.0, 87.0)]),
                      "claim", REFERENCE_EASY, 1.0)
    assert not trials["admitted"].any() and picked(trials) == [1] and trials["rank"].tolist() == [3, 1, 2]


def test_the_claim_rules_ties_go_to_all_classes_then_to_the_first_trial():
    trials = T.choose(scored([(0, 90.0, 80.0, 85.0), (1, 91.0, 80.0, 86.0), (2, 92.0, 80.0, 86.0),
                              (3, 50.0, 99.0, 99.0)]), "claim", REFERENCE_EASY, 1.0)
    assert picked(trials) == [1] and trials["rank"].tolist() == [3, 1, 2, 4]  # the unadmitted last
    with pytest.raises(ValueError, match="'claim' needs the reference"):
        T.choose(scored([(0, 90.0, 80.0, 85.0)]), "claim")


LRS = [0.01, 0.02, 0.03]  # a searched train.lr per trial
#: ten classes' validation accuracy of the reference: the hard group is the 4 lowest (3, 6, 0, 8)
REFERENCE_10 = np.array([0.60, 0.95, 0.80, 0.40, 0.85, 0.75, 0.50, 0.90, 0.65, 0.70])


def validation_runs(dataset="fashion_mnist", easy_drop=(0.0, 0.0, 0.0), hard_gain=(1.0, 4.0, 2.0)):
    """per_class and runs tables of the reference and of three mr2 trials on a validation split: trial
    i lowers the easy classes by easy_drop[i] and raises the hard ones by hard_gain[i] points."""
    hard, easy = [3, 6, 0, 8], [1, 7, 4]
    rows, runs = [], []
    for method, variant, acc, extra in [("erm", "default", REFERENCE_10, {})] + [
            ("mr2", f"trial{i}", REFERENCE_10 + (np.isin(np.arange(10), hard) * g - np.isin(np.arange(10), easy) * e) / 100,
             {T.SEARCHED: json.dumps(["c_bar", "train.lr"]), option_column("c_bar"): 0.5 + i,
              option_column("train.lr"): LRS[i]})
            for i, (e, g) in enumerate(zip(easy_drop, hard_gain))]:
        rows += [{"dataset": dataset, "method": method, "variant": variant, "seed": 100, "class": c, "accuracy": a}
                 for c, a in enumerate(acc)]
        runs.append({"dataset": dataset, "method": method, "variant": variant, "seed": 100, **extra})
    return pd.DataFrame(rows), pd.DataFrame(runs)


def test_write_tuning_under_the_claim_rule_records_the_rule_the_groups_and_the_trials_digest(tmp_path):
    # trial 1 gains most on the hard classes but costs the easy ones 3 points: the claim rule passes it
    # over; trial 0 gains most on all classes (+2 on the easy ones); trial 2 keeps the easy ones within 1
    per_class, runs = validation_runs(easy_drop=(-2.0, 3.0, 0.5))
    record = T.write_tuning(per_class, runs, tmp_path, "claim", "erm", effect=1.0)
    assert record["methods"] == {"mr2": {"c_bar": 2.5, "train.lr": 0.03}}  # trial 2: +2 hard, -0.5 easy
    chosen = yaml.safe_load((tmp_path / "chosen.yaml").read_text())
    assert chosen["criterion"] == "claim" and chosen["effect_of_interest"] == 1.0
    assert chosen["other_criteria"] == {"hard": {"mr2": {"c_bar": 1.5, "train.lr": 0.02}},
                                        "all": {"mr2": {"c_bar": 0.5, "train.lr": 0.01}}}
    assert chosen["tuning_csv_sha256"] == hashlib.sha256((tmp_path / "tuning.csv").read_bytes()).hexdigest()
    trials = pd.read_csv(tmp_path / "tuning.csv")
    assert trials["admitted"].tolist() == [True, False, True] and trials["chosen"].tolist() == [False, False, True]
    assert {"chosen_hard", "chosen_all", "chosen_claim"} <= set(trials) and "chosen_other" not in trials
    groups = pd.read_csv(tmp_path / "reference_groups.csv")
    assert groups.groupby("group").size().to_dict() == {"easy": 3, "hard": 4, "medium": 3}
    assert sorted(groups.loc[groups["group"].eq("hard"), "class"]) == [0, 3, 6, 8]
    assert groups.set_index("class").loc[3, "val_accuracy"] == pytest.approx(40.0)
    md = " ".join((tmp_path / "tuning.md").read_text().split())
    assert "Selection rule ('claim'): among the trials whose validation easy-group accuracy is at most 1 point(s)" in md
    assert "of 10 classes the hard group holds 4, the medium 3 and the easy 3" in md
    assert "| 3, 2 admitted |" in md and "c_bar = 1.5, train.lr = 0.02 | c_bar = 0.5, train.lr = 0.01 |" in md


def test_write_tuning_checks_the_rule_before_it_writes(tmp_path):
    per_class, runs = validation_runs()
    with pytest.raises(ValueError, match="tune.criterion"):
        T.write_tuning(per_class, runs, tmp_path / "t", "worst")
    assert not (tmp_path / "t").exists()


# ----------------------------------------------------------------------------- a searched training recipe
def test_a_trial_and_the_final_runs_put_a_searched_recipe_into_train_not_into_the_loss():
    config = controls()
    space = config["tune"]["space"]["erm_tuned"]
    drawn = trial_options(space, 8, 0, "erm_tuned")
    trial = plan.run_config(config, SCHEMA, "fashion_mnist", "erm_tuned", "trial3", 100)
    assert trial["train"]["lr"] == drawn[3]["train.lr"] and trial["train"]["weight_decay"] == drawn[3]["train.weight_decay"]
    assert trial["method"]["options"] == {} and trial["train"]["epochs"] == 20  # the rest of the recipe kept
    assert trial["tags"]["searched"] == ["train.lr", "train.weight_decay"]
    chosen = lambda dataset: {"methods": {"erm_tuned": {"train.lr": 0.02, "train.weight_decay": 1e-4},  # noqa: E731
                                          "ce_temperature": {"tau": 0.4}, "mr2": {"c_bar": 0.7, "lam": 0.2}}}
    final = plan.run_config(config, SCHEMA, "fashion_mnist", "erm_tuned", "default", 0, chosen)
    assert (final["train"]["lr"], final["train"]["weight_decay"], final["method"]["options"]) == (0.02, 1e-4, {})
    check = plan.run_config(config, SCHEMA, "fashion_mnist.x4", "erm_tuned", "default", 0, chosen)
    assert (check["train"]["lr"], check["train"]["epochs"]) == (0.02, 80)
    assert plan.run_config(config, SCHEMA, "fashion_mnist", "ce_temperature", "default", 0, chosen)["method"][
        "options"] == {"tau": 0.4}
    erm = plan.run_config(config, SCHEMA, "fashion_mnist", "erm", "default", 0, chosen)
    assert "lr" not in erm["train"] and "tuned" not in erm["tags"]  # the reference keeps the shared recipe
    other = lambda dataset: {"methods": {**chosen(dataset)["methods"], "erm_tuned": {"train.lr": 0.03,  # noqa: E731
                                                                                      "train.weight_decay": 1e-4}}}
    assert plan.run_hash(config, SCHEMA, "fashion_mnist", "erm_tuned", "default", chosen) != \
        plan.run_hash(config, SCHEMA, "fashion_mnist", "erm_tuned", "default", other)


def test_the_trial_table_reads_a_searched_recipe_from_the_run_config():
    per_class, runs = validation_runs()
    table = T.trial_table(per_class, runs)
    assert [json.loads(o) for o in table["options"]] == [{"c_bar": 0.5 + i, "train.lr": LRS[i]} for i in range(3)]


def with_space(space, **change):
    raw = yaml.safe_load((REPO / "config" / "tuned-controls.yaml").read_text())
    raw["tune"]["space"] = space
    raw.update(change)
    return raw


@pytest.mark.parametrize("raw, message", [
    (with_space({"erm_tuned": {"train.batch_size": [32, 256]}}),
     r"config key 'tune\.space\.erm_tuned\.train\.batch_size': the training recipe has no searchable key "
     r"'batch_size'"),
    (with_space({"erm_tuned": {"gamma": [0.5, 2.0]}}),
     r"config key 'tune\.space\.erm_tuned\.gamma': method 'erm_tuned' has no option 'gamma'; its options: none; "
     r"the training recipe's: train\.lr"),
    (with_space({"erm_tuned": {"train.lr": [0.01, 0.1]}}, run={"train": {"lr": 0.05}}),
     r"config key 'tune\.space\.erm_tuned\.train\.lr': also set in 'run\.train\.lr'"),
    (with_space({"erm_tuned": {"train.weight_decay": [1e-5, 1e-3]}},
                datasets={"fashion_mnist": {"data": {"name": "fashion_mnist"}, "train": {"epochs": 20,
                                                                                           "weight_decay": 1e-4}}}),
     r"config key 'tune\.space\.erm_tuned\.train\.weight_decay': also set in "
     r"'datasets\.fashion_mnist\.train\.weight_decay'"),
    (with_space({"ce_temperature": {"tau": [0.1, 1.0]}}, method_options={"ce_temperature": {"tau": 0.5}}),
     r"config key 'tune\.space\.ce_temperature\.tau': also set in 'method_options\.ce_temperature'"),
    (with_space({"ce_temperature": {"tau": [0.0, 1.0]}}), r"config key 'tune\.space\.ce_temperature\.tau"),
], ids=["unknown-recipe-key", "unknown-loss-option", "fixed-in-run", "fixed-in-the-block", "fixed-option", "range"])
def test_a_bad_search_is_refused_naming_its_key(raw, message):
    with pytest.raises(ValueError, match=message):
        checked(raw, SCHEMAS)


@pytest.mark.parametrize("change, message", [
    # B5: a follower's stated option would be replaced by its source's choice
    ({"methods": ["erm", "mr2", "mr2_no_rep"], "method_options": {"mr2_no_rep": {"c_bar": 3.0}},
      "tune": {"space": {"mr2": {"c_bar": [0.5, 2.0]}}, "seeds": [9], "follow": {"mr2_no_rep": "mr2"}}},
     r"config key 'tune\.follow\.mr2_no_rep': it would replace 'method_options\.mr2_no_rep\.c_bar' by the value "
     r"'tune\.space\.mr2\.c_bar' chooses"),
    ({"methods": ["erm", "mr2", "mr2_uniform"],
      "tune": {"space": {"mr2": {"c_bar": [0.5, 2.0]}, "mr2_uniform": {"lam": [0.1, 1.0]}}, "seeds": [9],
               "follow": {"mr2_uniform": "mr2"}}},
     r"config key 'tune\.follow\.mr2_uniform': 'mr2_uniform' is searched itself \('tune\.space\.mr2_uniform'\)"),
    # B4: the reference following a searched method (it would need the choice its own runs rank)
    ({"methods": ["erm", "mr2"], "tune": {"space": {"mr2": {"c_bar": [0.5, 2.0]}}, "seeds": [9], "follow": {"erm": "mr2"}}},
     r"config key 'tune\.follow\.erm': the reference is not tuned"),
], ids=["B5-follower-option-stated", "searched-follower", "B4-reference-follows"])
def test_a_follow_that_cannot_hold_is_refused_naming_its_key(change, message):
    raw = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    raw.update(change)
    raw.pop("sweeps")
    with pytest.raises(PipelineConfigError, match=message):
        checked(raw, SCHEMAS)


# ----------------------------------------------------------------------------- epochs chosen on validation
EPOCHS_SPACE = {"eta": [0.001, 0.1], "train.epochs": [20, 80]}


def dro_searched(**change):
    """tuned-controls.yaml with group DRO added, its η and its own epochs searched."""
    raw = yaml.safe_load((REPO / "config" / "tuned-controls.yaml").read_text())
    raw["methods"] = [*raw["methods"], "dro"]
    raw["tune"]["space"]["dro"] = dict(EPOCHS_SPACE)
    raw.update(copy.deepcopy(change))
    return raw


def test_searched_epochs_are_whole_numbers_from_the_same_log_uniform_draws_and_leave_the_other_draws_alone():
    import math
    import random
    drawn = trial_options(EPOCHS_SPACE, 200, 0, "dro")
    rng = random.Random("0:dro")  # the documented stream: options in sorted order, trial by trial
    etas = [rng.uniform(math.log(0.001), math.log(0.1)) for _ in range(200)]
    epochs = [round(math.exp(rng.uniform(math.log(20), math.log(80)))) for _ in range(200)]
    assert [d["train.epochs"] for d in drawn] == epochs
    assert all(type(d["train.epochs"]) is int and 20 <= d["train.epochs"] <= 80 for d in drawn)
    assert len({d["train.epochs"] for d in drawn}) > 30  # the range is searched, not one value
    assert [d["eta"] for d in drawn] == [d["eta"] for d in trial_options({"eta": [0.001, 0.1]}, 200, 0, "dro")]
    assert [d["eta"] for d in drawn] == pytest.approx([math.exp(e) for e in etas], rel=5e-3)


@pytest.mark.parametrize("bounds", [[20.5, 80], [20, 80.25]])
def test_a_range_of_epochs_that_is_not_whole_numbers_is_refused_naming_its_key(bounds):
    raw = dro_searched()
    raw["tune"]["space"]["dro"]["train.epochs"] = bounds
    with pytest.raises(ValueError, match=r"config key 'tune\.space\.dro\.train\.epochs': a range of whole numbers"):
        checked(raw, SCHEMAS)


def test_searched_epochs_beside_the_methods_own_epochs_are_refused_naming_both_keys():
    raw = dro_searched()
    raw["datasets"]["fashion_mnist"]["method_epochs"] = {"dro": 40}
    with pytest.raises(PipelineConfigError, match=r"config key 'tune\.space\.dro\.train\.epochs': also set in "
                                                  r"'datasets\.fashion_mnist\.method_epochs\.dro'"):
        checked(raw, SCHEMAS)


def test_a_method_trains_its_chosen_epochs_and_its_convergence_check_factor_times_them():
    config = checked(dro_searched(), SCHEMAS)  # the dataset block's 20 epochs stay every other method's
    drawn = trial_options(config["tune"]["space"]["dro"], 8, 0, "dro")
    for i in range(8):
        assert plan.run_config(config, SCHEMA, "fashion_mnist", "dro", f"trial{i}", 100)["train"]["epochs"] == \
            drawn[i]["train.epochs"]
    base = first_trial_chosen(config)
    # the choice as a table hands it back: 37.0, a float holding a whole number, is the integer 37
    chosen = lambda dataset: {"methods": {**base(dataset)["methods"], "dro": {"eta": 0.01, "train.epochs": 37.0}}}  # noqa: E731
    final = plan.run_config(config, SCHEMA, "fashion_mnist", "dro", "default", 0, chosen)
    assert final["train"]["epochs"] == 37 and type(final["train"]["epochs"]) is int
    assert final["method"]["options"]["eta"] == 0.01 and "epochs" not in final["method"]["options"]
    assert plan.run_config(config, SCHEMA, "fashion_mnist.x4", "dro", "default", 0, chosen)["train"]["epochs"] == 4 * 37
    for method in ("erm", "mr2"):
        assert plan.run_config(config, SCHEMA, "fashion_mnist", method, "default", 0, chosen)["train"]["epochs"] == 20
        assert plan.run_config(config, SCHEMA, "fashion_mnist.x4", method, "default", 0, chosen)["train"]["epochs"] == 80


def test_the_trial_table_records_searched_epochs_as_whole_numbers():
    per_class, runs = validation_runs()
    runs[T.SEARCHED] = runs[T.SEARCHED].where(runs["method"].eq("erm"), json.dumps(["c_bar", "train.epochs"]))
    runs[option_column("train.epochs")] = np.array([20, 24, 40, 61], dtype=np.int64)
    options = [json.loads(o) for o in T.trial_table(per_class, runs)["options"]]
    assert options == [{"c_bar": 0.5 + i, "train.epochs": e} for i, e in enumerate([24, 40, 61])]
    assert all(type(o["train.epochs"]) is int for o in options)


# ----------------------------------------------------------------------------- variance.split
def test_under_variance_split_each_seed_draws_its_own_data_and_the_seeds_share_one_folder():
    config = controls()
    assert plan.split_varies(config)
    chosen = first_trial_chosen(config)
    for method, variant, seeds in [("erm", "default", [0, 1, 15]), ("mr2", "default", [0, 7]), ("mr2", "trial2", [100])]:
        folder = plan.run_hash(config, SCHEMA, "fashion_mnist", method, variant, chosen)
        for seed in seeds:
            cfg = plan.run_config(config, SCHEMA, "fashion_mnist", method, variant, seed, chosen)
            assert cfg["data"]["split_seed"] == seed == cfg["seed"]
            # the folder is the hash of the settings without the seed, the split seed read as "the run's seed"
            settings = {k: v for k, v in cfg.items() if k != "seed"}
            settings["data"] = {**settings["data"], "split_seed": plan.SPLIT_SEED_IS_SEED}
            assert plan.short_hash(settings) == folder
    hashes = {seed: plan.data_hash(config, "fashion_mnist", seed) for seed in plan.all_seeds(config)}
    assert len(set(hashes.values())) == len(hashes) == 17  # 16 final seeds and the trials' seed 100
    assert plan.data_settings(config, "fashion_mnist", 3)["data"]["split_seed"] == 3
    assert plan.data_hash(config, "fashion_mnist.x4", 3) == hashes[3]  # a check trains on its seed's draw
    with pytest.raises(PipelineConfigError, match="depend on the run's seed"):
        plan.data_hash(config, "fashion_mnist")


def test_data_seed_finds_the_seed_of_a_prepared_file_and_refuses_an_unknown_one():
    config = controls()
    for seed in (0, 4, 100):  # a final run's, a convergence check's, a trial's
        assert plan.data_seed(config, "fashion_mnist", plan.data_hash(config, "fashion_mnist", seed)) == seed
    with pytest.raises(PipelineConfigError, match=r"prepared data 'deadbeef' of dataset 'fashion_mnist' are no seed's"):
        plan.data_seed(config, "fashion_mnist", "deadbeef")
    plain = controls(variance={"split": False})
    assert plan.data_seed(plain, "fashion_mnist", "deadbeef") is None
    # without variance.split the seed changes nothing: one prepared file, one split, for every run
    assert plan.data_hash(plain, "fashion_mnist", 3) == plan.data_hash(plain, "fashion_mnist")
    assert "split_seed" not in plan.run_config(plain, SCHEMA, "fashion_mnist", "erm", "default", 3)["data"]


@pytest.mark.parametrize("where", ["datasets", "run"])
def test_a_split_seed_fixed_beside_variance_split_is_refused_naming_the_key(where):
    raw = yaml.safe_load((REPO / "config" / "tuned-controls.yaml").read_text())
    if where == "datasets":
        raw["datasets"]["fashion_mnist"]["data"]["split_seed"] = 3
        key = r"datasets\.fashion_mnist\.data\.split_seed"
    else:
        raw["run"] = {"data": {"split_seed": 3}}
        key = r"run\.data\.split_seed"
    with pytest.raises(PipelineConfigError, match=rf"config key '{key}': with 'variance\.split: true'"):
        checked(raw, SCHEMAS)
    raw["variance"] = {"split": False}
    assert checked(raw, SCHEMAS)  # without variance.split a fixed split seed is the config's own


# ----------------------------------------------------------------------------- convergence.method_seeds, primary
def test_method_seeds_add_exactly_the_listed_convergence_runs():
    config = controls()
    check = {(r["method"], r["seed"]) for r in plan.runs(config) if r["dataset"] == "fashion_mnist.x4"}
    own = ("mr2", "ce_temperature", "erm_tuned")  # the primary test's methods, 5 seeds; the others 3
    assert check == {(m, s) for m in own for s in range(5)} | \
        {(m, s) for m in config["methods"] if m not in own for s in range(3)}
    plain = controls(convergence={"factor": 4, "seeds": [0, 1, 2]})
    assert len(plan.runs(config)) - len(plan.runs(plain)) == 3 * 2
    with pytest.raises(PipelineConfigError, match=r"config key 'convergence\.method_seeds\.focal': method 'focal' "
                                                  r"is not in 'methods'"):
        controls(convergence={"factor": 4, "seeds": [0], "method_seeds": {"focal": [0, 1]}})


@pytest.mark.parametrize("primary, message", [
    ({"dataset": "mnist1d", "method": "mr2", "controls": ["erm_tuned"]}, r"'primary\.dataset': 'mnist1d' is not in"),
    ({"dataset": "fashion_mnist", "method": "focal", "controls": ["erm_tuned"]}, r"'primary\.method': 'focal' is not in"),
    ({"dataset": "fashion_mnist", "method": "mr2", "controls": ["erm_tuned", "dro"]},
     r"'primary\.controls': 'dro' is not in"),
    ({"dataset": "fashion_mnist", "method": "mr2", "controls": ["mr2", "erm_tuned"]},
     r"'primary\.controls': holds the tested method 'mr2'"),
    ({"dataset": "fashion_mnist", "method": "mr2", "controls": ["erm"]}, r"'primary': 'erm' is not searched"),
    ({"dataset": "fashion_mnist", "method": "mr2", "controls": []}, r"'primary\.controls'"),
])
def test_a_primary_test_that_cannot_be_run_as_declared_is_refused_naming_its_key(primary, message):
    with pytest.raises(PipelineConfigError, match=message):
        controls(primary=primary)


def test_the_declared_primary_test_defaults_to_the_hard_group():
    config = controls(primary={"dataset": "fashion_mnist", "method": "mr2", "controls": ["ce_temperature"]})
    assert config["primary"]["group"] == "hard"


# ----------------------------------------------------------------------------- the machine a run was made on
INTEL = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R)  Platinum 8259CL CPU @ 2.50GHz
flags\t\t: fpu avx2

processor\t: 1
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz
"""
AMD = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model name\t: AMD EPYC 7763 64-Core Processor
"""


def test_the_cpu_model_and_vendor_are_read_from_cpuinfo_text():
    from mr2.common.kernels import cpu_model, cpu_vendor

    assert cpu_model(INTEL) == "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz"  # runs of spaces read as one
    assert cpu_vendor(INTEL) == "GenuineIntel"
    assert (cpu_model(AMD), cpu_vendor(AMD)) == ("AMD EPYC 7763 64-Core Processor", "AuthenticAMD")


def test_without_cpuinfo_the_model_falls_back_to_the_platform_then_unknown(monkeypatch):
    import platform

    from mr2.common.kernels import cpu_model, cpu_vendor

    arm = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n"
    monkeypatch.setattr(platform, "processor", lambda: "")
    assert (cpu_model(arm), cpu_vendor(arm), cpu_model(""), cpu_vendor("vendor_id\t:\n")) == ("unknown",) * 4
    monkeypatch.setattr(platform, "processor", lambda: "aarch64")
    assert cpu_model(arm) == "aarch64"


def test_kernel_settings_name_every_variable_and_none_where_unset():
    from mr2.common.kernels import KERNEL_VARIABLES, kernel_settings

    assert set(KERNEL_VARIABLES) == {"MR2_CPU_ISA", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_CBWR"}
    assert kernel_settings({"MKL_CBWR": "AVX2", "OTHER": "x"}) == {"MR2_CPU_ISA": None, "ATEN_CPU_CAPABILITY": None,
                                                                   "ONEDNN_MAX_CPU_ISA": None, "MKL_CBWR": "AVX2"}
