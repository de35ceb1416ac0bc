"""A config given with ``--configfile`` is the config: no other file's keys leak into it.

Snakemake merges every file a ``configfile:`` directive loads under the files given on the command
line. This workflow loads its default (config/config.yaml) only where no ``--configfile`` is given,
but a project that uses it as a module, as snakedeploy writes one, has its own
``configfile: "config/config.yaml"`` (a copy of the default): with ``--configfile my.yaml`` a key
that the default sets and ``my.yaml`` does not (``train.augment: none``) would silently change the
user's runs and every run's hash. ``check_not_merged`` refuses that merge, naming the keys.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..common.io import load_yaml_file
from .config import PipelineConfigError
from .root import config_name


def leaked_keys(loaded: Any, given: Any, prefix: str = "") -> list[str]:
    """The dotted keys of ``loaded`` that ``given`` sets nowhere on their path (what a recursive merge
    of ``given`` over ``loaded`` keeps from ``loaded``)."""
    if not isinstance(loaded, Mapping) or not isinstance(given, Mapping):
        return []
    out = []
    for key, value in loaded.items():
        path = f"{prefix}{key}"
        if key not in given:
            out.append(path)
        else:
            out.extend(leaked_keys(value, given[key], path + "."))
    return out


def check_not_merged(loaded_files: Iterable[str | os.PathLike], given_files: Iterable[str | os.PathLike],
                     given: Mapping[str, Any], replaced: bool) -> None:
    """With config files given on the command line (``given_files``; ``given``: their merged config
    and ``--config``), a file a ``configfile:`` directive loaded besides them (``loaded_files``, which
    Snakemake lists with them) must add no key: a ``PipelineConfigError`` naming the file and its keys
    otherwise. ``replaced``: Snakemake's ``--replace-workflow-config``, which drops the directive's
    file, so nothing is merged."""
    given_paths = {Path(f).resolve() for f in given_files}
    if not given_paths or replaced:
        return
    for file in loaded_files:
        if Path(file).resolve() in given_paths or not Path(file).is_file():
            continue
        keys = leaked_keys(load_yaml_file(file) or {}, given)
        if keys:
            shown = ", ".join(keys[:5]) + (" ..." if len(keys) > 5 else "")
            raise PipelineConfigError(
                f"config file {file} (a `configfile:` of the workflow) is merged under --configfile "
                f"{config_name(sorted(given_paths))}: its keys {shown} would change your runs; run with "
                "--replace-workflow-config, or load it only where no --configfile is given (docs/pipeline.md, "
                "'As a module')")
