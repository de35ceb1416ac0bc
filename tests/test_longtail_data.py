"""Positive controls' data (issue 24) and the second dataset's size (issue 23): the long-tailed
training split, the planted dataset, MNIST-1D's size options, LDAM's deferred re-weighting.

Each is checked against an independent computation: the published CIFAR-LT counts and a literal
transcription of the authors' formulas, the empirical spread of the generated classes.
"""

import hashlib
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import yaml

from mr2.engine.data import load_prepared, prepare_dataset, resolve_config
from mr2.engine.data.cache import check_made_from
from mr2.engine.data.planted import PLANTED_OPTIONS, generate_planted
from mr2.engine.data.registry import MNIST1D_OPTIONS
from mr2.engine.data.split import exponential_profile, subsample_to_counts
from mr2.method.losses import build_loss

ROOT = Path(__file__).resolve().parents[1]
RUN = yaml.safe_load((ROOT / "workflow" / "schemas" / "run.schema.yaml").read_text())
SMALL = {"name": "planted", "options": {"train_per_class": 120, "test_per_class": 30, "dim": 4}}


def authors_counts(img_max, cls_num, imb_factor):
    """LDAM-DRW's imbalance_cifar.py get_img_num_per_cls (exp), transcribed."""
    out = []
    for cls_idx in range(cls_num):
        num = img_max * (imb_factor ** (cls_idx / (cls_num - 1.0)))
        out.append(int(num))
    return out


def test_exponential_profile_gives_the_published_cifar_lt_counts():
    # CIFAR-10-LT at ratio 100 as the long-tail literature tabulates it, 12,406 images in all
    assert exponential_profile(5000, 10, 100) == [5000, 2997, 1796, 1077, 645, 387, 232, 139, 83, 50]
    assert sum(exponential_profile(500, 100, 100)) == 10847  # CIFAR-100-LT, ratio 100
    for n_max, k, ratio in [(900, 10, 100), (450, 100, 100), (500, 100, 50), (37, 7, 3.5), (10, 2, 1)]:
        assert exponential_profile(n_max, k, ratio) == authors_counts(n_max, k, 1 / ratio)


def test_subsample_to_counts_keeps_each_class_its_count(gen):
    y = torch.randint(0, 5, (400,), generator=gen)
    want = torch.tensor([50, 0, 7, 1000, 3])
    keep = subsample_to_counts(y, want, seed=3)
    have = torch.bincount(y, minlength=5)
    assert torch.equal(torch.bincount(y[keep], minlength=5), torch.minimum(want, have))
    assert torch.equal(keep, keep.sort().values) and len(set(keep.tolist())) == len(keep)
    assert torch.equal(keep, subsample_to_counts(y, want, seed=3))
    assert not torch.equal(keep, subsample_to_counts(y, want, seed=4))


def test_long_tailed_split_keeps_validation_and_test_balanced(tmp_path):
    ratio = 10
    balanced = prepare_dataset(SMALL, tmp_path / "b.pt")
    lt = prepare_dataset({**SMALL, "imbalance": {"ratio": ratio}}, tmp_path / "lt.pt")
    b, d = load_prepared(tmp_path / "b.pt"), load_prepared(tmp_path / "lt.pt")
    n_max = 120 - round(0.1 * 120)  # every class: 120 generated, 12 to validation
    k = np.arange(10)
    expected = np.floor(n_max * np.power(1.0 / ratio, k / 9.0)).astype(int)
    assert torch.bincount(d.train.y, minlength=10).tolist() == expected.tolist() == lt["train_per_class"]
    assert balanced["train_per_class"] == [n_max] * 10
    # validation and test: the same balanced samples as without imbalance
    assert torch.equal(d.indices["val"], b.indices["val"]) and torch.equal(d.indices["test"], b.indices["test"])
    assert torch.bincount(d.val.y).tolist() == [12] * 10 and torch.bincount(d.test.y).tolist() == [30] * 10
    # the long-tailed training split is drawn from the balanced one, with its own samples' data
    assert set(d.indices["train"].tolist()) <= set(b.indices["train"].tolist())
    assert torch.equal(d.train.x, b.train.x[torch.isin(b.indices["train"], d.indices["train"])])
    # normalisation statistics of the long-tailed split itself
    assert d.info.mean[0] == pytest.approx(d.train.x.double().mean().item(), abs=1e-6)
    # seeded: the same file again, another split_seed another draw
    again = prepare_dataset({**SMALL, "imbalance": {"ratio": ratio}}, tmp_path / "again.pt")
    assert again["checksum"] == lt["checksum"]
    other = load_prepared(prepare_dataset({**SMALL, "imbalance": {"ratio": ratio}, "split_seed": 1},
                                          tmp_path / "other.pt")["path"])
    assert torch.bincount(other.train.y, minlength=10).tolist() == expected.tolist()
    assert not torch.equal(other.indices["train"], d.indices["train"])


def test_the_long_tailed_draw_is_seeded_by_the_split_seeds_own_imbalance_seed(tmp_path):
    """The samples a long-tailed split keeps are those ``subsample_to_counts`` draws from the balanced
    training split with the seed written out here, sha256("<split_seed>:imbalance") (its first 8
    bytes, halved): not the split seed itself nor the seed of another draw (train_cap, val), whose
    samples would then be correlated with the long tail's."""
    ratio = 10
    for split_seed in (0, 3):
        config = {**SMALL, "split_seed": split_seed}
        b = load_prepared(prepare_dataset(config, tmp_path / f"b{split_seed}.pt")["path"])
        lt = load_prepared(prepare_dataset({**config, "imbalance": {"ratio": ratio}},
                                           tmp_path / f"lt{split_seed}.pt")["path"])
        counts = torch.tensor(exponential_profile(int(torch.bincount(b.train.y).max()), 10, ratio))

        def kept(seed):
            return b.indices["train"][subsample_to_counts(b.train.y, counts, seed)]

        digest = hashlib.sha256(f"{split_seed}:imbalance".encode()).digest()
        assert torch.equal(lt.indices["train"], kept(int.from_bytes(digest[:8], "big") >> 1))
        for other in ([split_seed] + [int.from_bytes(hashlib.sha256(f"{split_seed}:{p}".encode()).digest()[:8],
                                                     "big") >> 1 for p in ("train_cap", "val")]):
            assert not torch.equal(lt.indices["train"], kept(other)), other


def test_imbalance_and_options_are_part_of_the_prepared_files_provenance(tmp_path):
    path = tmp_path / "lt.pt"
    prepare_dataset({**SMALL, "imbalance": {"ratio": 10}}, path)
    data = load_prepared(path)
    assert data.config["imbalance"] == {"ratio": 10.0, "profile": "exp"}
    assert data.config["options"] == {**PLANTED_OPTIONS, **SMALL["options"]}
    check_made_from(data, path, {**SMALL, "imbalance": {"ratio": 10.0, "profile": "exp"}})  # same, resolved
    with pytest.raises(ValueError, match="data.imbalance"):
        check_made_from(data, path, SMALL)
    with pytest.raises(ValueError, match="data.imbalance"):
        check_made_from(data, path, {**SMALL, "imbalance": {"ratio": 50}})
    with pytest.raises(ValueError, match="data.options"):
        check_made_from(data, path, {**SMALL, "imbalance": {"ratio": 10}, "options": {"train_per_class": 121, "dim": 4}})


@pytest.mark.parametrize("cfg, needle", [
    ({"name": "planted", "imbalance": 100}, "'imbalance'"),
    ({"name": "planted", "imbalance": {"ratio": 0.5}}, "imbalance.ratio"),
    ({"name": "planted", "imbalance": {"ratio": True}}, "imbalance.ratio"),
    ({"name": "planted", "imbalance": {"ratio": 10, "profile": "step"}}, "imbalance.profile"),
    ({"name": "planted", "imbalance": {"ratio": 10, "order": "random"}}, "order"),
    ({"name": "planted", "options": {"dims": 3}}, "dims"),
    ({"name": "planted", "options": {"dim": 2.5}}, "dim"),
    ({"name": "planted", "options": {"spread_min": 2.0, "spread_max": 1.0}}, "spread_max"),
    ({"name": "mnist1d", "options": {"train_split": 1.0}}, "train_split"),
    ({"name": "fashion_mnist", "options": {"num_samples": 10}}, "num_samples"),
])
def test_bad_imbalance_or_options_are_refused_naming_the_key(cfg, needle):
    with pytest.raises(ValueError, match=needle) as err:
        resolve_config(cfg)
    assert "\n" not in str(err.value)


def test_planted_is_deterministic_and_its_spreads_follow_the_profile():
    opts = dict(num_classes=6, dim=8, train_per_class=3000, test_per_class=20, radius=5.0, spread_min=0.5,
                spread_max=2.0, seed=7)
    (x, y), (xt, yt) = generate_planted(**opts)
    (x2, y2), (xt2, yt2) = generate_planted(**opts)
    assert torch.equal(x, x2) and torch.equal(xt, xt2) and torch.equal(y, y2)
    assert x.shape == (6 * 3000, 1, 8) and xt.shape == (6 * 20, 1, 8) and x.dtype == torch.float32
    assert torch.bincount(y).tolist() == [3000] * 6 and torch.bincount(yt).tolist() == [20] * 6
    assert not torch.equal(x, generate_planted(**{**opts, "seed": 8})[0][0])
    # per class: the sd of every coordinate around the class's empirical mean, and the mean's norm
    xs = x.squeeze(1).double().numpy()
    for k in range(6):
        part = xs[y.numpy() == k]
        sd = np.sqrt(((part - part.mean(0)) ** 2).mean())
        assert sd == pytest.approx(0.5 + 1.5 * k / 5, rel=0.03), k
        assert np.linalg.norm(part.mean(0)) == pytest.approx(5.0, abs=0.15), k
    # the test split is drawn around the same means
    means = np.stack([xs[y.numpy() == k].mean(0) for k in range(6)])
    test_means = np.stack([xt.squeeze(1).double().numpy()[yt.numpy() == k].mean(0) for k in range(6)])
    assert np.abs(test_means - means).max() < 2.0 * 3 / np.sqrt(20) + 0.1


def test_mnist1d_size_options_reach_the_generator(tmp_path):
    import mnist1d.data

    package = mnist1d.data.get_dataset_args(as_dict=True)
    assert MNIST1D_OPTIONS == {key: package[key] for key in MNIST1D_OPTIONS}
    summary = prepare_dataset({"name": "mnist1d", "options": {"num_samples": 200, "train_split": 0.5},
                               "val_fraction": 0.0}, tmp_path / "m.pt")
    assert summary["n_train"] == 100 and summary["n_test"] == 100 and summary["input_shape"] == [1, 40]
    assert summary["config"]["options"] == {"num_samples": 200, "train_split": 0.5}


def test_the_schema_names_the_loaders_options():
    defs = RUN["$defs"]
    assert set(defs["planted_options"]["properties"]) == set(PLANTED_OPTIONS)
    assert set(defs["mnist1d_options"]["properties"]) == set(MNIST1D_OPTIONS)


def test_ldam_drw_weights_are_the_authors_and_weight_the_loss(gen):
    """LDAM-DRW's cifar_train.py: per_cls_weights = (1 − β)/(1 − β^n), normalised to sum to K, from
    the DRW epoch on (β = 0.9999); the loss is the class-weighted mean of the margin cross-entropy."""
    cls_num_list = [900, 540, 324, 194, 116, 70, 42, 25, 15, 9]
    beta = 0.9999
    effective_num = 1.0 - np.power(beta, cls_num_list)
    per_cls_weights = (1.0 - beta) / np.array(effective_num)
    per_cls_weights = per_cls_weights / np.sum(per_cls_weights) * len(cls_num_list)
    loss = build_loss("ldam", 10, 4, class_counts=torch.tensor(cls_num_list), drw_epoch=3)
    loss.on_epoch_start(3)
    assert np.allclose(loss.class_summary()["class_weight"].numpy(), per_cls_weights, rtol=1e-6)
    z, y = torch.rand(20, 10, generator=gen), torch.randint(0, 10, (20,), generator=gen)
    m = 1.0 / np.sqrt(np.sqrt(np.array(cls_num_list, dtype=float)))
    m = m * (0.5 / m.max())
    per_sample = F.cross_entropy(30 * (z - F.one_hot(y, 10) * torch.tensor(m, dtype=torch.float32)[y, None]), y,
                                 reduction="none")
    w = torch.tensor(per_cls_weights, dtype=torch.float32)[y]
    expected = (w * per_sample).sum() / w.sum()
    assert torch.allclose(loss(z, torch.zeros(20, 4), y).total, expected, rtol=1e-5)
    loss.on_epoch_start(2)  # before the DRW epoch: unweighted
    assert torch.allclose(loss(z, torch.zeros(20, 4), y).total, per_sample.mean(), rtol=1e-5)


def test_planted_vectors_train_with_the_mlp_and_are_not_augmented(tmp_path):
    """kind "vector": ``augment: auto`` leaves the inputs as they are (no shift, unlike signals), and
    the MLP takes them; the model's features are its last hidden layer."""
    from mr2.engine.config import DEFAULTS, deep_merge, validate
    from mr2.engine.train import Runner, train

    data = {**SMALL, "imbalance": {"ratio": 10}}
    path = tmp_path / "p.pt"
    prepare_dataset(data, path)
    cfg = validate(deep_merge(DEFAULTS, {"data": data, "model": {"name": "mlp", "options": {"hidden": 16}},
                                         "train": {"epochs": 1, "batch_size": 32}, "device": "cpu", "threads": 1,
                                         "method": {"name": "ldam", "options": {"drw_epoch": 0}}}))
    runner = Runner(cfg, path, tmp_path / "run", log=lambda *a, **k: None)
    x = runner.data.train.x[:8]
    assert torch.equal(runner.train_transform(x, torch.Generator().manual_seed(0)), runner.eval_transform(x))
    assert runner.model.feature_dim == 16
    counts = torch.bincount(runner.data.train.y, minlength=10).double()
    assert torch.allclose(runner.loss.drw_weights.double(), (1 - 0.9999) / (1 - 0.9999 ** counts) /
                          ((1 - 0.9999) / (1 - 0.9999 ** counts)).sum() * 10, rtol=1e-5)  # n_k of the long-tailed split
    numbers = train(cfg, path, tmp_path / "run", log=lambda *a, **k: None)
    assert np.isfinite(numbers["train_loss"]) and (tmp_path / "run" / "model.pt").is_file()
