"""File-backed datasets: image paths + labels, decoded on demand.

``FileSplit`` holds a list of image paths and their labels; ``FileSplit.dataset()`` is a torch
``Dataset`` that decodes one image to uint8 RGB (3, S, S): the shorter side is resized to
S = ``image_size`` (bilinear, antialiased) and the centre S x S is cropped. Every image then has
the same size, so batches can be stacked and augmented on the device with ``mr2.augment``
(random crop/flip is done there, not here). Grey or RGBA files are converted to RGB.

Sources of the path lists:
- the five fine-grained sets of the paper via torchvision's dataset classes (they parse the
  official annotation files; torchvision downloads only when asked, ``download=True``);
- an image-folder layout ``root/train/<class>/*`` and ``root/val/<class>/*`` (or ``test``),
  used for ImageNet and any other set.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch.utils.data import Dataset

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
DEFAULT_IMAGE_SIZE = 224


def load_image(path: str, image_size: int) -> torch.Tensor:
    """Decode one image file to uint8 (3, S, S): RGB, shorter side resized to S, centre crop."""
    from PIL import Image, UnidentifiedImageError
    from torchvision.transforms.v2 import functional as TF

    try:
        with Image.open(path) as img:
            rgb = np.asarray(img.convert("RGB"))
    except FileNotFoundError as err:
        raise FileNotFoundError(f"image file not found: {path}") from err
    except (UnidentifiedImageError, OSError, SyntaxError) as err:
        raise ValueError(f"image file {path} is truncated or not an image ({err})") from err
    x = torch.from_numpy(rgb.copy()).permute(2, 0, 1)
    x = TF.resize(x, [image_size], interpolation=TF.InterpolationMode.BILINEAR, antialias=True)
    return TF.center_crop(x, [image_size, image_size])


class FileImageDataset(Dataset):
    """Torch Dataset view of a ``FileSplit``: item i is (uint8 (3, S, S) image, int label)."""

    def __init__(self, split: "FileSplit"):
        self.split = split

    def __len__(self) -> int:
        return len(self.split.paths)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return load_image(self.split.paths[i], self.split.image_size), int(self.split.y[i])


@dataclass
class FileSplit:
    """A file-backed split: ``paths[i]`` is an image of class ``y[i]``, decoded at ``image_size``."""

    paths: list[str]
    y: torch.Tensor
    image_size: int = DEFAULT_IMAGE_SIZE

    def __post_init__(self):
        if len(self.paths) != len(self.y):
            raise ValueError(f"FileSplit: {len(self.paths)} paths but {len(self.y)} labels")

    def __len__(self) -> int:
        return len(self.paths)

    def subset(self, idx: torch.Tensor) -> "FileSplit":
        """The split restricted to the given indices (in that order)."""
        idx_list = idx.tolist()
        return FileSplit([self.paths[i] for i in idx_list], self.y[idx], self.image_size)

    def dataset(self) -> FileImageDataset:
        """A torch Dataset decoding and resizing the images (use with a DataLoader's workers)."""
        return FileImageDataset(self)

    def load_all(self) -> torch.Tensor:
        """Decode every image into one uint8 (N, 3, S, S) tensor (small sets and tests only)."""
        if not self.paths:
            return torch.empty(0, 3, self.image_size, self.image_size, dtype=torch.uint8)
        return torch.stack([load_image(p, self.image_size) for p in self.paths])


def check_images_readable(paths: list[str], what: str) -> None:
    """A ``ValueError`` naming the first file of ``paths`` that PIL cannot open as an image (a text
    file named ``.png``, a truncated file): found when the data is prepared, not after training.
    Each file's header is read and ``Image.verify()`` checks its structure (PNG: every chunk's
    checksum) without decoding the pixels, which keeps this affordable for large sets."""
    from PIL import Image

    for path in paths:
        try:
            with Image.open(path) as img:
                img.verify()
        except Exception as err:  # noqa: BLE001 - PIL raises many kinds for a bad file; reported in one line
            detail = " ".join(str(err).split())[:200]
            raise ValueError(f"{what}: {path} is not a readable image ({type(err).__name__}: {detail}); "
                             "remove or replace it") from None


def check_files_exist(paths: list[str], what: str) -> None:
    """FileNotFoundError naming the first missing files of a split (a cheap check before training)."""
    missing = [p for p in paths if not Path(p).is_file()]
    if missing:
        raise FileNotFoundError(f"{what}: {len(missing)} of {len(paths)} image files are missing, e.g. {missing[:3]}")


# --------------------------------------------------------------------------- image folders


def _resolved(path: Path) -> Path:
    """``path`` with every symlink resolved; a loop or a link to nothing is a ``ValueError`` naming it."""
    try:
        return path.resolve(strict=True)
    except (RuntimeError, OSError) as err:  # RuntimeError: a symlink loop (Python < 3.13)
        raise ValueError(f"image folder: {path} is a symlink loop or a link to nothing ({err})") from None


def _class_dirs(split_dir: Path) -> list[Path]:
    """The class folders of a split; each symlink among them resolved (a loop is an error), and each
    must resolve to a folder inside the split (``train/x -> .`` or ``val/a -> ../train/a`` would
    put images under a second label or into another split)."""
    split_real = _resolved(split_dir)
    dirs = []
    for entry in sorted(split_dir.iterdir()):
        real = _resolved(entry) if entry.is_symlink() else entry
        if not real.is_dir():
            continue
        if split_real not in _resolved(real).parents:
            raise ValueError(f"image folder {split_dir}: class folder {entry} resolves to {_resolved(real)}, "
                             f"not a folder inside {split_dir}; a class folder may not link elsewhere")
        dirs.append(entry)
    return dirs


def _scan(split_dir: Path, class_to_idx: dict[str, int]) -> tuple[list[str], list[int]]:
    """Image files under ``split_dir/<class>/`` (recursively, sorted; symlinked sub-folders are not
    followed, a symlink loop is an error) and their class indices."""
    paths, labels = [], []
    for cdir in _class_dirs(split_dir):
        if cdir.name not in class_to_idx:
            raise ValueError(
                f"image folder {split_dir}: class folder {cdir.name!r} does not exist in the training folder"
            )
        entries = sorted(cdir.rglob("*"))
        for entry in entries:
            if entry.is_symlink():
                _resolved(entry)
        files = [p for p in entries if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS]
        paths += [str(p) for p in files]
        labels += [class_to_idx[cdir.name]] * len(files)
    return paths, labels


def check_no_shared_images(splits: dict[str, list[str]]) -> None:
    """A ``ValueError`` naming both paths when one image file is listed twice: in two splits (training
    images would be evaluated on) or under two classes. One file is one file however it is reached: a
    symlink, or a hard link (the same device and inode under two names). Then no image of the training
    split may hold the same bytes as one of another split (a copy: ``same_bytes``)."""
    seen: dict[tuple[int, int], tuple[str, str]] = {}
    for split, paths in splits.items():
        for path in paths:
            _resolved(Path(path))  # a loop or a dangling link: its own error, naming it
            st = os.stat(path)
            if (st.st_dev, st.st_ino) in seen:
                other_split, other = seen[(st.st_dev, st.st_ino)]
                where = f"in the {other_split} and the {split} split" if other_split != split else f"twice in the {split} split"
                raise ValueError(f"image folder: {other} and {path} are the same image file "
                                 f"({_resolved(Path(path))}; a symbolic or a hard link), {where}; each image may be "
                                 "listed once")
            seen[(st.st_dev, st.st_ino)] = (split, path)
    names = list(splits)
    for other in names[1:]:
        found = same_bytes(splits[names[0]], splits[other])
        if found:
            raise ValueError(f"image folder: {found[0]} and {found[1]} hold the same bytes (a copy), in the "
                             f"{names[0]} and the {other} split: an evaluation image would be trained on; remove "
                             "one of them")


def _digest(path: str, limit: int | None = None) -> str:
    """SHA-256 of the file ``path``, of its first ``limit`` bytes with ``limit`` given."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        left = limit
        while left is None or left > 0:
            chunk = f.read(1 << 20 if left is None else min(1 << 20, left))
            if not chunk:
                break
            h.update(chunk)
            left = None if left is None else left - len(chunk)
    return h.hexdigest()


def same_bytes(first: list[str], second: list[str]) -> tuple[str, str] | None:
    """A pair (a file of ``first``, a file of ``second``) with the same bytes, or None. Only files of
    a size found in both lists are read, first their first 64 KiB, then in full where those agree:
    a large set is checked without reading most of it."""
    def sizes(paths):
        out: dict[int, list[str]] = {}
        for path in paths:
            out.setdefault(os.path.getsize(path), []).append(path)
        return out

    a, b = sizes(first), sizes(second)
    for size in sorted(a.keys() & b.keys()):
        left, right = a[size], b[size]
        for limit in (1 << 16, None):  # the first 64 KiB, then the whole file, of the candidates left
            ours: dict[str, list[str]] = {}
            for path in left:
                ours.setdefault(_digest(path, limit), []).append(path)
            theirs: dict[str, list[str]] = {}
            for path in right:
                digest = _digest(path, limit)
                if digest in ours:
                    theirs.setdefault(digest, []).append(path)
            if not theirs:
                break
            left = [path for digest in theirs for path in ours[digest]]
            right = [path for paths in theirs.values() for path in paths]
        else:
            digest = next(iter(theirs))
            return ours[digest][0], theirs[digest][0]
    return None


def image_folder_dirs(root: Path) -> tuple[Path, Path]:
    """``root/train`` and the evaluation folder (the test split) ``root/val`` or ``root/test`` of an
    image-folder set; a ``FileNotFoundError`` naming the layout when either is missing. A root with
    both is a ``ValueError``: which one is the test split would be a guess (and settings picked on
    ``val/`` must never be scored on it), so the user keeps one."""
    root = Path(root)
    train_dir = root / "train"
    if not train_dir.is_dir():
        raise FileNotFoundError(
            f"image folder dataset not found: expected {train_dir}/<class>/<images> and "
            f"{root}/val/<class>/<images> (or {root}/test/...)"
        )
    found = [root / s for s in ("val", "test") if (root / s).is_dir()]
    if len(found) == 2:
        raise ValueError(f"image folder {root} has both val/ and test/: which is the test split is ambiguous; keep "
                         f"test/ as the test split and merge {root}/val into {root}/train (the validation split is "
                         "drawn from train/ by data.val_fraction or data.val_cap), or point data.root at a folder "
                         "with one of them")
    eval_dir = found[0] if found else None
    if eval_dir is None:
        raise FileNotFoundError(f"image folder {root}: no evaluation folder, expected {root}/val or {root}/test")
    return train_dir, eval_dir


def read_image_folder(root: Path) -> tuple[tuple[list[str], list[int]], tuple[list[str], list[int]], list[str]]:
    """Paths and labels of ``root/train/<class>/*`` and of ``root/val`` (or ``root/test``).

    Classes are the sorted names of the training folder's sub-folders; the evaluation folder
    may not introduce a class the training folder lacks, and no training class may be empty.
    """
    train_dir, eval_dir = image_folder_dirs(root)
    classes = [p.name for p in _class_dirs(train_dir)]
    if not classes:
        raise ValueError(f"image folder {train_dir}: no class sub-folders")
    class_to_idx = {c: i for i, c in enumerate(classes)}
    train = _scan(train_dir, class_to_idx)
    counts = np.bincount(np.asarray(train[1], dtype=np.int64), minlength=len(classes))
    empty = [classes[k] for k in np.flatnonzero(counts == 0)]
    if empty:
        raise ValueError(f"image folder {train_dir}: classes without images: {empty[:10]}")
    test = _scan(eval_dir, class_to_idx)
    if not test[0]:
        raise ValueError(f"image folder {eval_dir}: no images")
    check_no_shared_images({"training": train[0], "evaluation": test[0]})
    return train, test, classes


# --------------------------------------------------------------------------- torchvision sets


@dataclass(frozen=True)
class TorchvisionSet:
    """How one fine-grained set is read through torchvision.

    ``train_splits`` are the official splits pooled into our training pool (our validation split
    is carved from it by ``stratified_split``); ``test_split`` is the official test split.
    """

    cls_name: str  # torchvision.datasets class
    folder: str  # the sub-folder of root that torchvision reads
    train_splits: tuple[str, ...]
    test_split: str
    extra: tuple[tuple[str, str], ...] = ()  # further constructor arguments
    can_download: bool = True
    how_to_get: str = "run with download=True (torchvision fetches it)"


TORCHVISION_SETS: dict[str, TorchvisionSet] = {
    # Flowers-102: official train (10/class) and val (10/class) pooled; test 6149 images.
    "flowers102": TorchvisionSet("Flowers102", "flowers-102", ("train", "val"), "test"),
    "oxford_pets": TorchvisionSet("OxfordIIITPet", "oxford-iiit-pet", ("trainval",), "test"),
    "stanford_cars": TorchvisionSet(
        "StanfordCars",
        "stanford_cars",
        ("train",),
        "test",
        can_download=False,
        how_to_get=(
            "torchvision cannot download it any more; place the devkit/, cars_train/, cars_test/ "
            "and cars_test_annos_withlabels.mat of the original release there"
        ),
    ),
    "food101": TorchvisionSet("Food101", "food-101", ("train",), "test"),
    # FGVC-Aircraft at the 100-variant level: official trainval pooled; test 3333 images.
    "fgvc_aircraft": TorchvisionSet(
        "FGVCAircraft", "fgvc-aircraft-2013b", ("trainval",), "test", extra=(("annotation_level", "variant"),)
    ),
}


def _samples_of(ds, where: Path) -> tuple[list[str], list[int]]:
    """Image paths and labels parsed by a torchvision dataset object (without decoding images).

    torchvision keeps them in private attributes whose names differ by class; this is the one
    place that knows them, and it fails loudly if a torchvision release renames them.
    """
    if hasattr(ds, "_samples"):  # StanfordCars: list of (path, label)
        paths = [str(p) for p, _ in ds._samples]
        labels = [int(t) for _, t in ds._samples]
    elif hasattr(ds, "_image_files") and hasattr(ds, "_labels"):  # Flowers102, Food101, FGVCAircraft
        paths, labels = [str(p) for p in ds._image_files], [int(t) for t in ds._labels]
    elif hasattr(ds, "_images") and hasattr(ds, "_labels"):  # OxfordIIITPet
        paths, labels = [str(p) for p in ds._images], [int(t) for t in ds._labels]
    else:
        raise RuntimeError(
            f"{type(ds).__name__} at {where}: this torchvision version stores its file list under "
            "unknown attribute names; mr2.data_files._samples_of needs updating"
        )
    return paths, labels


def check_torchvision_set(name: str, root: Path, download: bool) -> Path:
    """The folder of fine-grained set ``name`` under ``root``; a ``ValueError`` when ``download`` is
    asked of a set torchvision cannot download, a ``FileNotFoundError`` when the folder is absent
    and no download is asked."""
    spec = TORCHVISION_SETS[name]
    where = Path(root) / spec.folder
    if download and not spec.can_download:
        raise ValueError(f"dataset {name!r}: download=True is not possible; {spec.how_to_get} ({where})")
    if not download and not where.is_dir():
        raise FileNotFoundError(f"dataset {name!r} not found: looked for {where}; {spec.how_to_get}")
    return where


def read_torchvision_set(
    name: str, root: Path, download: bool
) -> tuple[tuple[list[str], list[int]], tuple[list[str], list[int]], list[str]]:
    """Paths and labels of the training pool and the test split of a fine-grained set."""
    import torchvision.datasets as tvd

    spec = TORCHVISION_SETS[name]
    where = check_torchvision_set(name, root, download)
    cls: Callable = getattr(tvd, spec.cls_name)
    kwargs = dict(spec.extra)

    def build(split: str, dl: bool):
        try:
            return cls(root=str(root), split=split, download=dl, **kwargs)
        except RuntimeError as err:  # torchvision: "Dataset not found or corrupted"
            raise FileNotFoundError(
                f"dataset {name!r} at {where} is missing or incomplete ({err}); {spec.how_to_get}"
            ) from err

    train_paths, train_labels = [], []
    for i, split in enumerate(spec.train_splits):
        ds = build(split, download and i == 0)
        p, t = _samples_of(ds, where)
        train_paths += p
        train_labels += t
    test_ds = build(spec.test_split, False)
    test = _samples_of(test_ds, where)
    n_classes = max(train_labels + test[1]) + 1
    classes = [str(c) for c in getattr(test_ds, "classes", [])] or [str(k) for k in range(n_classes)]
    return (train_paths, train_labels), test, classes
