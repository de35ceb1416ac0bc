"""Just Train Twice (Liu, Haghgoo, Chen, Raghunathan, Koh, Sagawa, Liang, Finn, ICML 2021) as
three steps of the pipeline:

1. stage 1: an ERM run of ``stage1_epochs`` epochs (``stage1_config``), its own run folder;
2. errors: the stage-1 model predicts the TRAINING split (evaluation transform, no augmentation,
   never the test split); the misclassified samples are the error set E, written as a CSV
   (``error_set``, ``python -m mr2 errors``);
3. stage 2: the ``jtt`` run, cross-entropy on an epoch in which every sample of E appears
   λ_up = ``upweight`` times (``stage2_config`` sets ``train.upsample_file`` and
   ``train.upsample_factor``; mr2.upsample builds the epoch's order).

Stage 1 is a complete ERM run of T epochs (the dataset's warm-up, then the cosine schedule
fitted to T; with T <= ``train.warmup_epochs`` it is all warm-up), not the first T epochs of a
longer run. It inherits ``train.select`` from the dataset block: with ``best_val`` the stage-1
epoch is chosen on the validation split, which is never part of E. E depends on the seed: each
seed's jtt run has its own stage 1.

Against the authors' code (anniesch/jtt). (a) Up-weighting: their ``--up_weight u`` concatenates
the training set with u further copies of E (``run_expt.py``), so a sample of E appears u + 1 times
per epoch; ours appears ``upweight`` = λ_up times, the paper's objective λ_up Σ_E ℓ + Σ_{not E} ℓ.
At the same number ours therefore has one copy fewer: ``upweight: u + 1`` reproduces their
``--up_weight u`` (their λ_up = 6 runs are ``upweight: 7`` here). (b) The error set: theirs is read
from the predictions their training loop records during stage 1's last epoch (training mode,
augmented inputs, each batch predicted before its own update; ``process_training.py`` reads
``output_train_epoch_T.csv``); ours comes from a separate evaluation pass of the final stage-1
model over the training split (evaluation mode, no augmentation), which is the paper's "examples
misclassified by the stage-1 model" and does not depend on the augmentation draw or the last
epoch's updates. There is no option for their recorded predictions.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from .augment import normalize
from ..common.io import remove_stray_temporaries, save_csv
from .inference import predict, select_device
from .loader import Source
from ..method.losses import resolve_options
from .upsample import ERROR_COLUMNS


def _jtt_options(cfg: dict[str, Any]) -> dict[str, Any]:
    if cfg["method"]["name"] != "jtt":
        raise ValueError(f"expected the config of a 'jtt' run, got method {cfg['method']['name']!r}")
    return resolve_options("jtt", cfg["method"]["options"])


def stage1_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """The stage-1 run of a ``jtt`` run config: ERM (no options) for ``stage1_epochs`` epochs,
    no up-sampling, tagged ``stage: jtt_stage1``; everything else as in ``cfg``."""
    opts = _jtt_options(cfg)
    out = copy.deepcopy(cfg)
    out["method"] = {"name": "erm", "options": {}}
    out["train"].update(epochs=opts["stage1_epochs"], upsample_file=None, upsample_factor=1)
    out["tags"] = {**out.get("tags", {}), "stage": "jtt_stage1"}
    return out


def stage2_config(cfg: dict[str, Any], errors_file: str | Path) -> dict[str, Any]:
    """The stage-2 run: ``cfg`` with ``train.upsample_file`` = the error set and
    ``train.upsample_factor`` = ``upweight``."""
    opts = _jtt_options(cfg)
    out = copy.deepcopy(cfg)
    out["train"].update(upsample_file=str(errors_file), upsample_factor=opts["upweight"])
    return out


@torch.no_grad()
def error_set(run_dir: str | Path, data_path: str | Path, out: str | Path, device: str = "auto",
              threads: int | None = None) -> pd.DataFrame:
    """Write the error set of the run in ``run_dir`` on the training split of ``data_path``:
    a CSV with a row per misclassified training sample (``index`` into the split, ``label``,
    ``predicted``), sorted by index. ``data_path`` must be the prepared file the run was trained
    on (``load_run``). Returns the table."""
    from .evaluate import load_run, set_run_threads

    dev = select_device(device)
    remove_stray_temporaries(out)  # left by a killed earlier run of this step
    cfg, model, _, data = load_run(run_dir, data_path, dev)  # data: the file the run was trained on
    set_run_threads(cfg, threads, run_dir)
    mean, std = torch.tensor(data.info.mean, device=dev), torch.tensor(data.info.std, device=dev)
    source = Source(data.train, dev, cfg["train"]["num_workers"])
    # the whole model on normalised images, as in evaluation (a linear probe's backbone is frozen,
    # so this equals its head on the cached features)
    logits, _ = predict(model, source, cfg["train"]["eval_batch_size"], lambda x: normalize(x, mean, std), dev, cfg["amp"])
    pred, y = logits.argmax(1).cpu(), source.y.cpu()
    wrong = torch.nonzero(pred != y).flatten()
    table = pd.DataFrame({"index": wrong.numpy(), "label": y[wrong].numpy(), "predicted": pred[wrong].numpy()},
                         columns=ERROR_COLUMNS)
    save_csv(table, out)
    return table
