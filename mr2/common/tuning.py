"""The tuning stage's trials: a seeded random search over stated ranges, the same budget per method.

Standard library only: the workflow draws the trials when it reads its config (no torch, no data),
and every session and machine draws the same ones. A trial is a run like any other: its options are
written into its run config, its variant is ``trial<i>`` and it is scored on the validation split
(``mr2 evaluate --split val``); the test set is never read for it.

  trial_options   the options of every trial of one method (log-uniform draws, 3 significant digits)
  trial_variant   ``trial3``: the variant name of trial 3; ``trial_index`` reads it back
  split_options   a trial's or a choice's options split into the loss's and the training recipe's:
                  a searched ``train.<key>`` (a key of ``TUNABLE_TRAIN``: lr, weight_decay, momentum,
                  min_lr, warmup_epochs, epochs) is the run config's ``train.<key>``, every other name a
                  loss option; ``train.epochs`` is a whole number (``INTEGER_TRAIN``)
  option_column   the column of the runs table that holds a searched option
  file_sha256     the SHA-256 of a file's bytes: chosen.yaml records that of the tuning.csv it was chosen
                  from (``TRIALS_DIGEST``), and the final runs read it only when the two still match
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from pathlib import Path

TRIAL_PREFIX = "trial"
_TRIAL = re.compile(rf"^{TRIAL_PREFIX}([0-9]+)\Z")
#: a searched option named ``train.<key>`` is the training recipe's ``train.<key>`` (the same for every
#: method), not a loss option; these are the recipe's keys a search may draw (positive numbers)
TRAIN_PREFIX = "train."
TUNABLE_TRAIN = ("lr", "weight_decay", "momentum", "min_lr", "warmup_epochs", "epochs")
#: the searchable recipe keys that are whole numbers: drawn log-uniformly like the others, then rounded
#: to the nearest integer (a method that needs more epochs gets them chosen on validation by the search)
INTEGER_TRAIN = ("epochs",)
#: the tags a run config carries when its options were chosen by tuning, and a trial's index
TUNED_TAG, TRIAL_TAG = "tuned", "trial"


def trial_variant(index: int) -> str:
    """``trial<index>``: the variant of a method's trial ``index`` (0-based)."""
    return f"{TRIAL_PREFIX}{int(index)}"


def trial_index(variant: str) -> int | None:
    """The index of a trial variant (``trial3`` -> 3); None for any other variant."""
    found = _TRIAL.match(str(variant))
    return int(found.group(1)) if found else None


def significant(value: float, digits: int = 3) -> float:
    """``value`` rounded to ``digits`` significant digits (0.0123456 -> 0.0123): readable option values."""
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


def is_integer_option(name: str) -> bool:
    """Whether searched option ``name`` is a whole number (``train.epochs``: ``INTEGER_TRAIN``)."""
    return name.startswith(TRAIN_PREFIX) and name[len(TRAIN_PREFIX):] in INTEGER_TRAIN


def trial_options(space: dict[str, list[float]], trials: int, seed: int, method: str) -> list[dict[str, float]]:
    """The options of ``trials`` trials of ``method``: for every option ``name: [low, high]`` of
    ``space`` an independent log-uniform draw exp(U(ln low, ln high)), rounded to 3 significant digits;
    a whole-number option (``train.epochs``) rounded to the nearest integer instead, its bounds integers.

    The draws of one method come from ``random.Random("<seed>:<method>")`` (string seeds are hashed
    with SHA-512 by the standard library, the same on every machine), option by option in sorted
    order, so adding a method or an option to the config never changes another method's trials.
    A ``ValueError`` names a range that is not 0 < low <= high."""
    for name, bounds in space.items():
        if (not isinstance(bounds, (list, tuple)) or len(bounds) != 2
                or not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds)
                or not 0 < bounds[0] <= bounds[1]):
            raise ValueError(f"config key 'tune.space.{method}.{name}': a range [low, high] with 0 < low <= high, "
                             f"got {bounds!r}")
        if is_integer_option(name) and not all(float(b).is_integer() for b in bounds):
            raise ValueError(f"config key 'tune.space.{method}.{name}': a range of whole numbers [low, high], "
                             f"got {bounds!r}")
    rng = random.Random(f"{int(seed)}:{method}")
    out: list[dict[str, float]] = [{} for _ in range(trials)]
    for name in sorted(space):
        low, high = (math.log(float(b)) for b in space[name])
        for options in out:
            drawn = math.exp(rng.uniform(low, high))
            options[name] = int(round(drawn)) if is_integer_option(name) else significant(drawn)
    return out


def split_options(options: dict) -> tuple[dict, dict]:
    """(loss options, training options) of a trial's or a choice's ``options``: ``train.lr: 0.1`` is
    the training recipe's ``lr`` (``TRAIN_PREFIX``), every other name a loss option. A whole-number
    option read back as a float (``train.epochs: 40.0`` from a table) is the integer it holds."""
    loss = {k: v for k, v in options.items() if not k.startswith(TRAIN_PREFIX)}
    train = {k[len(TRAIN_PREFIX):]: (int(v) if is_integer_option(k) and float(v).is_integer() else v)
             for k, v in options.items() if k.startswith(TRAIN_PREFIX)}
    return loss, train


def option_column(name: str) -> str:
    """The column of the runs table (a run's config.yaml, flattened) that holds searched option ``name``."""
    if name.startswith(TRAIN_PREFIX):
        return "config." + name
    return "config.method.options." + name


#: the key of chosen.yaml that holds the SHA-256 of the tuning.csv it was chosen from
TRIALS_DIGEST = "tuning_csv_sha256"


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (hex)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
