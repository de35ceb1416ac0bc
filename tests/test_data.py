"""Data layer: every loader on tiny generated files, the real Fashion-MNIST, splits, the prepared cache."""

import re
import gzip
import json
import pickle
import random
import struct

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from mr2.engine.data import (
    DATASETS,
    FileSplit,
    TensorSplit,
    load_prepared,
    load_raw,
    prepare_dataset,
    resolve_config,
    stratified_split,
    subsample_per_class,
)
from mr2.engine.data.registry import CONFIG_DEFAULTS, DEBIAN_FASHION_MNIST, channel_stats
from mr2.engine.data.files import TORCHVISION_SETS, load_image
from mr2.engine.data.readers import generate_mnist1d

# --------------------------------------------------------------------------- tiny file writers


def write_idx_gz(path, arr: np.ndarray):
    arr = np.asarray(arr, dtype=np.uint8)
    header = bytes([0, 0, 0x08, arr.ndim]) + struct.pack(f">{arr.ndim}i", *arr.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + arr.tobytes())


def tiny_fashion(root, n_train=40, n_test=20, seed=0):
    """Four IDX .gz files with 10 classes; returns the arrays written."""
    rng = np.random.default_rng(seed)
    xs = rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8)
    xt = rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8)
    ys, yt = np.arange(n_train) % 10, np.arange(n_test) % 10
    write_idx_gz(root / "train-images-idx3-ubyte.gz", xs)
    write_idx_gz(root / "train-labels-idx1-ubyte.gz", ys)
    write_idx_gz(root / "t10k-images-idx3-ubyte.gz", xt)
    write_idx_gz(root / "t10k-labels-idx1-ubyte.gz", yt)
    return xs, ys, xt, yt


def write_cifar100(root, n_train=30, n_test=10, seed=0):
    rng = np.random.default_rng(seed)
    folder = root / "cifar-100-python"
    folder.mkdir(parents=True)
    out = {}
    for name, n in (("train", n_train), ("test", n_test)):
        data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
        labels = [int(v) for v in rng.integers(0, 100, n)]
        with open(folder / name, "wb") as f:
            pickle.dump({b"data": data, b"fine_labels": labels, b"coarse_labels": [0] * n}, f)
        out[name] = (data, labels)
    with open(folder / "meta", "wb") as f:
        pickle.dump({b"fine_label_names": [f"class{k}".encode() for k in range(100)]}, f)
    return out


COLOURS = {"ant": (255, 0, 0), "bee": (0, 128, 255), "cat": (10, 200, 30)}


def write_image_folder(root, per_class=(3, 2), sizes=((20, 12), (9, 15)), ext=".png"):
    """root/train/<c>/*.png and root/val/<c>/*.png, each image a solid class colour (one unit of red off
    in val: no evaluation image is a copy of a training image)."""
    for split, n in zip(("train", "val"), per_class):
        for c, colour in COLOURS.items():
            d = root / split / c
            d.mkdir(parents=True)
            shade = colour if split == "train" else (colour[0] ^ 1, *colour[1:])
            for i in range(n):
                Image.new("RGB", sizes[i % len(sizes)], shade).save(d / f"{i}{ext}")


def solid_jpg(path, colour=(100, 50, 200), size=(10, 8)):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path)


# --------------------------------------------------------------------------- Fashion-MNIST


@pytest.mark.skipif(not DEBIAN_FASHION_MNIST.is_dir(), reason="Debian fashion-mnist files not installed")
def test_real_fashion_mnist_shapes_and_balance():
    train, test, info = load_raw("fashion_mnist")
    assert train.x.shape == (60000, 1, 28, 28) and test.x.shape == (10000, 1, 28, 28)
    assert train.x.dtype == torch.uint8 and train.y.dtype == torch.int64
    assert info.num_classes == 10 and len(info.class_names) == 10 and info.kind == "image"
    assert info.input_shape == (1, 28, 28)
    assert torch.bincount(train.y).tolist() == [6000] * 10
    assert torch.bincount(test.y).tolist() == [1000] * 10
    # the published per-pixel statistics of Fashion-MNIST's training set
    assert abs(info.mean[0] - 0.2860) < 1e-3 and abs(info.std[0] - 0.3530) < 1e-3


def test_fashion_mnist_tiny_idx_roundtrip(tmp_path):
    xs, ys, xt, yt = tiny_fashion(tmp_path)
    train, test, info = load_raw("fashion_mnist", root=tmp_path)
    assert torch.equal(train.x[:, 0], torch.from_numpy(xs)) and torch.equal(train.y, torch.from_numpy(ys))
    assert torch.equal(test.x[:, 0], torch.from_numpy(xt)) and test.y.tolist() == yt.tolist()
    assert info.mean[0] == pytest.approx(xs.mean() / 255, abs=1e-9)
    assert info.std[0] == pytest.approx(xs.std() / 255, abs=1e-9)


def test_fashion_mnist_truncated_gz_names_the_file(tmp_path):
    tiny_fashion(tmp_path)
    f = tmp_path / "train-images-idx3-ubyte.gz"
    f.write_bytes(f.read_bytes()[: len(f.read_bytes()) // 2])
    with pytest.raises(ValueError, match="train-images-idx3-ubyte.gz.*truncated"):
        load_raw("fashion_mnist", root=tmp_path)


def test_fashion_mnist_short_payload_is_detected(tmp_path):
    tiny_fashion(tmp_path)
    arr = np.zeros((40, 28, 28), np.uint8)
    header = bytes([0, 0, 8, 3]) + struct.pack(">3i", *arr.shape)
    with gzip.open(tmp_path / "train-images-idx3-ubyte.gz", "wb") as f:  # valid gzip, data cut short
        f.write(header + arr.tobytes()[:-100])
    with pytest.raises(ValueError, match="train-images-idx3-ubyte.gz.*declares shape"):
        load_raw("fashion_mnist", root=tmp_path)


def test_fashion_mnist_label_count_mismatch(tmp_path):
    tiny_fashion(tmp_path)
    write_idx_gz(tmp_path / "t10k-labels-idx1-ubyte.gz", np.zeros(7))
    with pytest.raises(ValueError, match="disagree"):
        load_raw("fashion_mnist", root=tmp_path)


def test_fashion_mnist_missing_says_where_it_looked(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path)) as err:
        load_raw("fashion_mnist", root=tmp_path)
    assert "download=True" in str(err.value)


# --------------------------------------------------------------------------- CIFAR-100 layout


def test_cifar100_pickle_layout(tmp_path):
    written = write_cifar100(tmp_path)
    train, test, info = load_raw("cifar100", root=tmp_path)
    data, labels = written["train"]
    assert train.x.shape == (30, 3, 32, 32) and train.x.dtype == torch.uint8
    # channel-major rows: red plane first, pixel (i, j) at i*32 + j
    assert train.x[4, 0, 2, 5] == data[4, 2 * 32 + 5]
    assert train.x[4, 1, 0, 0] == data[4, 1024]
    assert train.x[4, 2, 31, 31] == data[4, 3071]
    assert train.y.tolist() == labels and test.y.tolist() == written["test"][1]
    assert info.num_classes == 100 and info.class_names[7] == "class7" and info.input_shape == (3, 32, 32)


def test_cifar100_truncated_and_missing(tmp_path):
    write_cifar100(tmp_path)
    f = tmp_path / "cifar-100-python" / "train"
    f.write_bytes(f.read_bytes()[:500])
    with pytest.raises(ValueError, match="cifar-100-python/train.*truncated"):
        load_raw("cifar100", root=tmp_path)
    with pytest.raises(FileNotFoundError, match="cifar-100-python"):
        load_raw("cifar100", root=tmp_path / "nowhere")


def test_in_memory_sets_refuse_a_resize(tmp_path):
    write_cifar100(tmp_path)
    with pytest.raises(ValueError, match="image_size"):
        load_raw("cifar100", root=tmp_path, image_size=224)


# --------------------------------------------------------------------------- MNIST-1D, digits


def test_mnist1d_generated_without_touching_global_rng():
    np.random.seed(123)
    random.seed(123)
    expected_np, expected_py = np.random.rand(), random.random()
    np.random.seed(123)
    random.seed(123)
    (xtr, ytr), (xte, yte) = generate_mnist1d(num_samples=200)
    assert np.random.rand() == expected_np and random.random() == expected_py
    assert xtr.shape == (160, 1, 40) and xte.shape == (40, 1, 40) and xtr.dtype == torch.float32
    assert set(ytr.tolist()) <= set(range(10)) and len(set(ytr.tolist())) == 10
    (xtr2, _), _ = generate_mnist1d(num_samples=200)
    assert torch.equal(xtr, xtr2)  # the package's fixed seed


@pytest.mark.slow
def test_mnist1d_default_sizes():
    train, test, info = load_raw("mnist1d")
    assert train.x.shape == (4000, 1, 40) and test.x.shape == (1000, 1, 40)
    assert info.kind == "signal" and info.input_shape == (1, 40) and info.num_classes == 10


def test_digits_fixed_stratified_test_split():
    train, test, info = load_raw("digits")
    assert len(train) + len(test) == 1797 and train.x.shape[1:] == (1, 8, 8)
    assert train.x.dtype == torch.uint8 and int(train.x.max()) == 255
    frac = torch.bincount(test.y, minlength=10).double() / (
        torch.bincount(test.y, minlength=10) + torch.bincount(train.y, minlength=10)
    )
    assert torch.all((frac - 0.2).abs() < 0.01)
    again, _, _ = load_raw("digits")
    assert torch.equal(again.x, train.x)


# --------------------------------------------------------------------------- file-backed sets


def test_image_folder_loads_and_decodes(tmp_path):
    write_image_folder(tmp_path)
    train, test, info = load_raw("image_folder", root=tmp_path, image_size=16)
    assert isinstance(train, FileSplit) and len(train) == 9 and len(test) == 6
    assert info.class_names == sorted(COLOURS) and info.input_shape == (3, 16, 16)
    ds = train.dataset()
    for i in range(len(ds)):
        img, label = ds[i]
        assert img.shape == (3, 16, 16) and img.dtype == torch.uint8
        colour = torch.tensor(COLOURS[info.class_names[label]]).view(3, 1, 1)
        assert (img.int() - colour).abs().max() <= 1
    # statistics of solid colours: mean of the class colours weighted by image count
    expected = np.mean([COLOURS[c] for c in sorted(COLOURS)], axis=0) / 255
    np.testing.assert_allclose(info.mean, expected, atol=2 / 255)


def test_image_folder_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="train"):
        load_raw("image_folder", root=tmp_path)
    with pytest.raises(ValueError, match="needs root"):
        load_raw("image_folder")
    write_image_folder(tmp_path)
    (tmp_path / "val" / "dog").mkdir()
    with pytest.raises(ValueError, match="dog"):
        load_raw("image_folder", root=tmp_path)


def test_truncated_image_names_the_file(tmp_path):
    p = tmp_path / "x.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 40, 3), dtype=np.uint8)).save(p)
    p.write_bytes(p.read_bytes()[:200])
    with pytest.raises(ValueError, match="x.png"):
        load_image(str(p), 8)
    with pytest.raises(FileNotFoundError, match="nope.png"):
        load_image(str(tmp_path / "nope.png"), 8)


@pytest.mark.parametrize("name", sorted(TORCHVISION_SETS))
def test_torchvision_sets_missing_root_is_clear(tmp_path, name):
    with pytest.raises(FileNotFoundError, match=TORCHVISION_SETS[name].folder) as err:
        load_raw(name, root=tmp_path)
    assert name in str(err.value)


def test_stanford_cars_cannot_download(tmp_path):
    with pytest.raises(ValueError, match="stanford_cars"):
        load_raw("stanford_cars", root=tmp_path, download=True)


def test_food101_tiny_layout(tmp_path):
    base = tmp_path / "food-101"
    meta = {"train": {"apple_pie": ["apple_pie/1", "apple_pie/2"], "ramen": ["ramen/3"]},
            "test": {"apple_pie": ["apple_pie/4"], "ramen": ["ramen/5", "ramen/6"]}}  # fmt: skip
    (base / "meta").mkdir(parents=True)
    for split, d in meta.items():
        (base / "meta" / f"{split}.json").write_text(json.dumps(d))
        for rels in d.values():
            for rel in rels:
                solid_jpg(base / "images" / f"{rel}.jpg")
    train, test, info = load_raw("food101", root=tmp_path, image_size=12)
    assert info.class_names == ["apple_pie", "ramen"] and info.num_classes == 2
    assert train.y.tolist() == [0, 0, 1] and test.y.tolist() == [0, 1, 1]
    assert train.paths[2].endswith("ramen/3.jpg")
    assert train.dataset()[0][0].shape == (3, 12, 12)


def test_fgvc_aircraft_tiny_layout(tmp_path):
    data = tmp_path / "fgvc-aircraft-2013b" / "data"
    data.mkdir(parents=True)
    (data / "variants.txt").write_text("707-320\nA300B4\nDC-3\n")
    (data / "images_variant_trainval.txt").write_text("0001 707-320\n0002 DC-3\n0003 A300B4\n")
    (data / "images_variant_test.txt").write_text("0004 DC-3\n")
    for i in range(1, 5):
        solid_jpg(data / "images" / f"000{i}.jpg")
    train, test, info = load_raw("fgvc_aircraft", root=tmp_path, image_size=8)
    assert info.class_names == ["707-320", "A300B4", "DC-3"]
    assert train.y.tolist() == [0, 2, 1] and test.y.tolist() == [2]
    assert isinstance(test, FileSplit) and test.image_size == 8
    (data / "images" / "0004.jpg").unlink()  # listed in the annotations, absent on disk
    with pytest.raises(FileNotFoundError, match="0004.jpg"):
        load_raw("fgvc_aircraft", root=tmp_path)


# --------------------------------------------------------------------------- splits


@settings(max_examples=40, deadline=None)
@given(
    counts=st.lists(st.integers(1, 30), min_size=1, max_size=8),
    frac=st.floats(0.0, 0.95),
    seed=st.integers(0, 1000),
)
def test_stratified_split_properties(counts, frac, seed):
    y = torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts))
    y = y[torch.randperm(len(y), generator=torch.Generator().manual_seed(seed + 1))]
    tr, va = stratified_split(y, frac, seed)
    assert torch.equal(torch.sort(torch.cat([tr, va])).values, torch.arange(len(y)))  # a partition
    assert torch.equal(tr, tr.sort().values) and torch.equal(va, va.sort().values)
    n_val = torch.bincount(y[va], minlength=len(counts))
    for k, n in enumerate(counts):
        assert n_val[k] == min(round(frac * n), n - 1)  # stratified, one training sample kept
    tr2, va2 = stratified_split(y, frac, seed)
    assert torch.equal(tr, tr2) and torch.equal(va, va2)


def test_stratified_split_seed_changes_the_draw():
    y = torch.arange(200) % 4
    _, a = stratified_split(y, 0.2, 0)
    _, b = stratified_split(y, 0.2, 1)
    assert len(a) == len(b) == 40 and not torch.equal(a, b)
    _, half = stratified_split(y, 0.25, 0)  # 12.5 per class rounds half to even
    assert torch.bincount(y[half]).tolist() == [12] * 4
    with pytest.raises(ValueError, match="val_fraction"):
        stratified_split(y, 1.0, 0)


def test_subsample_per_class_balance_and_determinism():
    y = torch.repeat_interleave(torch.arange(4), torch.tensor([50, 8, 30, 20]))
    idx = subsample_per_class(y, 10, seed=3)
    assert torch.bincount(y[idx]).tolist() == [10, 8, 10, 10]
    assert torch.equal(idx, idx.sort().values) and len(idx.unique()) == len(idx)
    assert torch.equal(idx, subsample_per_class(y, 10, seed=3))
    assert not torch.equal(idx, subsample_per_class(y, 10, seed=4))
    assert torch.equal(subsample_per_class(y, None, 0), torch.arange(len(y)))
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="cap"):
            subsample_per_class(y, bad, 0)


# --------------------------------------------------------------------------- prepared file


def test_prepare_and_load_roundtrip(tmp_path):
    xs, ys, xt, yt = tiny_fashion(tmp_path, n_train=200, n_test=100)
    cfg = {"name": "fashion_mnist", "root": str(tmp_path), "train_cap": 15, "test_cap": 4, "val_fraction": 0.2}
    out = tmp_path / "prep" / "fm.pt"
    summary = prepare_dataset(cfg, out)
    assert summary["n_train"] == 120 and summary["n_val"] == 30 and summary["n_test"] == 40
    assert [p.name for p in out.parent.iterdir()] == ["fm.pt"]  # no temporary left behind
    data = load_prepared(out)
    assert data.config == {**CONFIG_DEFAULTS, **cfg}
    assert data.checksum == summary["checksum"]
    assert torch.bincount(data.train.y).tolist() == [12] * 10
    assert torch.bincount(data.val.y).tolist() == [3] * 10
    assert torch.bincount(data.test.y).tolist() == [4] * 10
    # train and val are disjoint parts of the official training set, test comes from the test set
    assert not set(data.indices["train"].tolist()) & set(data.indices["val"].tolist())
    assert torch.equal(data.train.x[:, 0], torch.from_numpy(xs)[data.indices["train"]])
    assert torch.equal(data.test.x[:, 0], torch.from_numpy(xt)[data.indices["test"]])
    # normalisation statistics come from the final training split only
    assert data.info.mean == pytest.approx(channel_stats(data.train.x)[0])
    assert data.info.mean != pytest.approx(channel_stats(torch.from_numpy(xs)[:, None])[0])
    # same config, same file contents
    assert prepare_dataset(cfg, tmp_path / "again.pt")["checksum"] == summary["checksum"]
    other = prepare_dataset({**cfg, "split_seed": 1}, tmp_path / "other.pt")
    assert other["checksum"] != summary["checksum"]


def test_prepare_file_backed_set(tmp_path):
    write_image_folder(tmp_path / "imgs", per_class=(4, 2))
    cfg = {"name": "image_folder", "root": str(tmp_path / "imgs"), "val_fraction": 0.25, "image_size": 10}
    summary = prepare_dataset(cfg, tmp_path / "f.pt")
    assert summary["storage"] == "files" and summary["n_val"] == 3 and summary["n_train"] == 9
    data = load_prepared(tmp_path / "f.pt")
    assert isinstance(data.val, FileSplit) and data.val.image_size == 10
    assert data.val.load_all().shape == (3, 3, 10, 10)
    assert not set(data.train.paths) & set(data.val.paths)


def test_prepared_checksum_tamper_is_detected(tmp_path):
    tiny_fashion(tmp_path, n_train=100)
    out = tmp_path / "fm.pt"
    prepare_dataset({"name": "fashion_mnist", "root": str(tmp_path)}, out)
    payload = torch.load(out, weights_only=True)
    payload["splits"]["train"]["x"][0, 0, 0, 0] ^= 1
    torch.save(payload, out)
    with pytest.raises(ValueError, match=r"fm\.pt.*checksum"):
        load_prepared(out)
    payload = torch.load(out, weights_only=True)
    payload["splits"]["train"]["x"][0, 0, 0, 0] ^= 1  # restored contents, but relabel one sample
    payload["splits"]["val"]["y"][0] = (payload["splits"]["val"]["y"][0] + 1) % 10
    torch.save(payload, out)
    with pytest.raises(ValueError, match="checksum"):
        load_prepared(out)


def test_prepared_truncated_or_missing(tmp_path):
    tiny_fashion(tmp_path)
    out = tmp_path / "fm.pt"
    prepare_dataset({"name": "fashion_mnist", "root": str(tmp_path)}, out)
    out.write_bytes(out.read_bytes()[:1000])
    with pytest.raises(ValueError, match=r"fm\.pt.*incomplete"):
        load_prepared(out)
    with pytest.raises(FileNotFoundError, match="missing.pt"):
        load_prepared(tmp_path / "missing.pt")


@pytest.mark.parametrize(
    "cfg, match",
    [
        ({"name": "fashion_mnist", "val_frac": 0.1}, "val_frac"),
        ({"name": "nope"}, "nope"),
        ({}, "name"),
        ({"name": "digits", "val_fraction": 1.0}, "val_fraction"),
        ({"name": "digits", "val_fraction": -0.1}, "val_fraction"),
        ({"name": "digits", "train_cap": 0}, "train_cap"),
        ({"name": "digits", "test_cap": 2.5}, "test_cap"),
        ({"name": "digits", "train_cap": True}, "train_cap"),
        ({"name": "digits", "download": "yes"}, "download"),
        ({"name": "digits", "split_seed": -1}, "split_seed"),
        ({"name": "digits", "image_size": 0}, "image_size"),
    ],
)
def test_bad_config_is_named(tmp_path, cfg, match):
    with pytest.raises(ValueError, match=match):
        resolve_config(cfg)
    with pytest.raises(ValueError, match=match):
        prepare_dataset(cfg, tmp_path / "x.pt")
    assert not (tmp_path / "x.pt").exists()


def test_unknown_dataset_in_load_raw():
    with pytest.raises(ValueError, match="unknown dataset 'svhn'"):
        load_raw("svhn")
    assert {"fashion_mnist", "mnist1d", "digits", "cifar100", "imagenet", "image_folder"} <= set(DATASETS)
    assert set(TORCHVISION_SETS) <= set(DATASETS)


def test_tensor_split_checks_lengths():
    with pytest.raises(ValueError, match="labels"):
        TensorSplit(torch.zeros(3, 1, 2, 2), torch.zeros(2, dtype=torch.int64))


@pytest.mark.parametrize("cfg, error, needle", [
    ({"name": "stanford_cars", "download": True}, ValueError, "download=True is not possible"),
    ({"name": "imagenet", "download": True}, ValueError, "download=True is not supported"),
    ({"name": "image_folder", "download": True}, ValueError, "needs root="),
    ({"name": "oxford_pets", "root": "/nonexistent"}, FileNotFoundError, "not found: looked for /nonexistent"),
    ({"name": "image_folder", "root": "/nonexistent"}, FileNotFoundError, "expected /nonexistent/train/<class>")])
def test_the_config_check_refuses_what_the_loader_would(cfg, error, needle):
    """check_available (the pipeline's data_config job) refuses before any job what prepare would
    refuse after the others started, with the loader's own message."""
    from mr2.engine.data.registry import check_available

    with pytest.raises(error, match=re.escape(needle)):
        check_available(cfg)
    with pytest.raises(error, match=re.escape(needle)):
        load_raw(**cfg)
