"""Readers for the in-memory datasets (file formats only; the registry lives in ``mr2.data``).

Each reader returns plain tensors: images as uint8 (N, C, H, W), signals as float32 (N, C, L),
labels as int64 (N,). Every failure names the file and says what was expected.

Formats
-------
- IDX (Fashion-MNIST): gzip of a big-endian header ``0 0 <dtype> <ndim>``, ``ndim`` int32 sizes,
  then the raw values. Only dtype 0x08 (uint8) occurs in Fashion-MNIST and is accepted.
- CIFAR-100 "python version": ``cifar-100-python/{train,test,meta}``, each a pickle of a dict with
  byte-string keys; ``data`` is (N, 3072) uint8 in channel-major order (R plane, G plane, B plane
  of 32x32), labels in ``fine_labels``, names in ``meta[fine_label_names]``. Read with a restricted
  unpickler (``CIFAR_GLOBALS``: numpy's array reconstruction only), so a crafted file cannot run
  code; any other global is refused naming the file.
- MNIST-1D: generated in memory by ``mnist1d.data.make_dataset(get_dataset_args())``.
- digits: scikit-learn's bundled 8x8 digits (``sklearn.datasets.load_digits``).
"""

from __future__ import annotations

import gzip
import pickle
import random
import struct
import zlib
from pathlib import Path

import numpy as np
import torch

from ..checkpoint import UnsafeFileError

IDX_UINT8 = 0x08


def read_idx_gz(path: str | Path) -> np.ndarray:
    """Read one gzip-compressed IDX file into a uint8 array of the shape its header declares.

    Raises FileNotFoundError if the file is missing and ValueError if it is truncated, not gzip,
    or its header does not match its payload.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"IDX file not found: {path}")
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except (EOFError, OSError, zlib.error) as err:
        raise ValueError(f"IDX file {path} is truncated or not gzip ({err}); fetch it again") from err
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"IDX file {path}: bad magic number (expected 0x0000 then dtype, ndim)")
    dtype_code, ndim = raw[2], raw[3]
    if dtype_code != IDX_UINT8:
        raise ValueError(f"IDX file {path}: dtype code {dtype_code:#04x}, only uint8 (0x08) is supported")
    header_len = 4 + 4 * ndim
    if len(raw) < header_len:
        raise ValueError(f"IDX file {path} is truncated inside its header")
    shape = struct.unpack(f">{ndim}i", raw[4:header_len])
    expected = int(np.prod(shape)) if ndim else 0
    payload = len(raw) - header_len
    if payload != expected:
        raise ValueError(
            f"IDX file {path}: header declares shape {shape} ({expected} values) but holds {payload}; "
            "the file is truncated or corrupt"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header_len).reshape(shape)


def read_idx_pair(images_path: Path, labels_path: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """Images (N, 1, H, W) uint8 and labels (N,) int64 from an IDX image file and its label file."""
    images = read_idx_gz(images_path)
    labels = read_idx_gz(labels_path)
    if images.ndim != 3 or labels.ndim != 1:
        raise ValueError(
            f"IDX files {images_path} / {labels_path}: expected 3-D images and 1-D labels, "
            f"got shapes {images.shape} / {labels.shape}"
        )
    if len(images) != len(labels):
        raise ValueError(
            f"IDX files {images_path} ({len(images)} images) and {labels_path} ({len(labels)} labels) disagree"
        )
    x = torch.from_numpy(images.copy()).unsqueeze(1)
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


#: the only globals a CIFAR python-version pickle names: numpy's array reconstruction (under
#: numpy 1's and numpy 2's module names)
CIFAR_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
}


class _CifarUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that builds nothing but numpy arrays, lists, dicts, numbers and strings."""

    def __init__(self, file, path: Path) -> None:
        super().__init__(file, encoding="bytes")
        self.path = path

    def find_class(self, module: str, name: str):
        if (module, name) not in CIFAR_GLOBALS:
            raise UnsafeFileError(f"CIFAR file {self.path}: refused to load: the pickle names {module}.{name}, "
                                  "not one of the numpy array globals a CIFAR pickle needs")
        return super().find_class(module, name)


def _unpickle(path: Path) -> dict:
    """Load one CIFAR python-version pickle (``CIFAR_GLOBALS`` only); clear errors for missing,
    truncated or crafted files."""
    if not path.is_file():
        raise FileNotFoundError(f"CIFAR file not found: {path}")
    try:
        with open(path, "rb") as f:
            obj = _CifarUnpickler(f, path).load()
    except UnsafeFileError:
        raise
    except Exception as err:  # noqa: BLE001 - a stranger's file may fail in any way; reported in one line
        raise ValueError(f"CIFAR file {path} is truncated or not a CIFAR pickle ({err})") from err
    if not isinstance(obj, dict):
        raise ValueError(f"CIFAR file {path}: expected a pickled dict, got {type(obj).__name__}")
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in obj.items()}


def _field(d: dict, key: str, path: Path):
    if key not in d:
        raise ValueError(f"CIFAR file {path}: missing key {key!r} (has {sorted(d)})")
    return d[key]


def read_cifar100_batch(path: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """Images (N, 3, 32, 32) uint8 and fine labels (N,) int64 from one CIFAR-100 batch file."""
    d = _unpickle(path)
    data = np.asarray(_field(d, "data", path), dtype=np.uint8)
    labels = np.asarray(_field(d, "fine_labels", path), dtype=np.int64)
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
        raise ValueError(f"CIFAR file {path}: data has shape {data.shape}, expected (N, 3072)")
    if len(data) != len(labels):
        raise ValueError(f"CIFAR file {path}: {len(data)} images but {len(labels)} labels")
    x = torch.from_numpy(data.reshape(-1, 3, 32, 32).copy())
    return x, torch.from_numpy(labels)


def read_cifar100_names(path: Path) -> list[str]:
    """The 100 fine class names from the CIFAR-100 ``meta`` file."""
    names = _field(_unpickle(path), "fine_label_names", path)
    return [n.decode() if isinstance(n, bytes) else str(n) for n in names]


def generate_mnist1d(num_samples: int | None = None, train_split: float | None = None) -> tuple[tuple, tuple]:
    """MNIST-1D from ``mnist1d.data.make_dataset(get_dataset_args())`` (never its download path).

    The package's default arguments (seed 42, 5000 samples, ``train_split`` 0.8 -> 4000 train /
    1000 test, 40-sample signals, 10 classes), with ``num_samples`` and ``train_split`` replaced
    where given: ``make_dataset`` draws ``num_samples // 10`` signals of each class, shuffles them
    and puts the first ``int(num_samples * train_split)`` in the training split (the class counts of
    each split vary around their share). ``make_dataset`` standardises the whole generated set (train and test
    together) to mean 0 / std 1 and reseeds the global ``random``/``numpy`` generators; their
    previous states are restored here so loading has no side effect on the caller's randomness.
    Returns ((x_train (N,1,40) float32, y_train), (x_test, y_test)).
    """
    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()
    if num_samples is not None:
        args.num_samples = int(num_samples)
    if train_split is not None:
        args.train_split = float(train_split)
    np_state, py_state = np.random.get_state(), random.getstate()
    try:
        d = make_dataset(args)
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)

    def as_split(x, y):
        xt = torch.from_numpy(np.asarray(x, dtype=np.float32)).unsqueeze(1)
        return xt, torch.from_numpy(np.asarray(y, dtype=np.int64))

    return as_split(d["x"], d["y"]), as_split(d["x_test"], d["y_test"])


def load_sklearn_digits() -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn's bundled digits as uint8 images (1797, 1, 8, 8) and labels (1797,).

    The bundled pixel values are integers 0..16; they are mapped to 0..255 by
    round(v * 255 / 16) so the set is a uint8 image set like the others.
    """
    from sklearn.datasets import load_digits

    d = load_digits()
    images = np.rint(d.images * (255.0 / 16.0)).astype(np.uint8)
    x = torch.from_numpy(images).unsqueeze(1)
    return x, torch.from_numpy(d.target.astype(np.int64))
