"""Datasets of the engine.

- ``registry``: every dataset by name (``DATASETS``), its loader, ``check_available`` and the
  data config's defaults and checks (``resolve_config``);
- ``readers`` / ``files``: the file formats (IDX, CIFAR pickles, MNIST-1D, digits; image files);
- ``planted``: the generated dataset whose hard classes are the more variable ones;
- ``split``: seeded stratified splits, per-class caps and the long-tailed profile;
- ``cache``: the prepared, checksummed dataset file (``prepare_dataset``, ``load_prepared``);
- ``types``: the containers (``DatasetInfo``, ``TensorSplit``, ``PreparedData``).
"""

from .cache import PREPARED_FORMAT, SPLIT_NAMES, content_checksum, load_prepared, prepare_dataset
from .files import FileSplit
from .registry import DATASETS, check_available, load_raw, resolve_config
from .split import derived_seed, stratified_split, subsample_per_class
from .types import DatasetInfo, PreparedData, Split, TensorSplit

__all__ = [
    "DATASETS",
    "DatasetInfo",
    "FileSplit",
    "PREPARED_FORMAT",
    "PreparedData",
    "SPLIT_NAMES",
    "Split",
    "TensorSplit",
    "check_available",
    "content_checksum",
    "derived_seed",
    "load_prepared",
    "load_raw",
    "prepare_dataset",
    "resolve_config",
    "stratified_split",
    "subsample_per_class",
]
