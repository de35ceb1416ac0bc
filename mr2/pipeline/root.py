"""One output root holds one config's results, and one workflow at a time writes it.

The tables, figures and report under an output root are built from the runs of one config, which its
``pipeline_config.json`` records. Snakemake decides what to rerun from its own records in the working
directory (``.snakemake/``), so it cannot see a workflow of another working directory rewrite the
output root: two configs on one root could end with "Nothing to be done" while the tables are the
other config's. Two guards close that:

- ``check_owner`` (when the workflow is parsed, a dry run too): an output root whose
  ``pipeline_config.json`` records another config is refused in one line naming both configs and the
  keys they differ in, before any job. Deleting that file hands the root to the new config: its
  tables, figures and report are rebuilt, and the runs, each in a folder named by its settings, kept.
- ``hold`` (when a workflow starts its jobs: Snakemake's ``onstart``): one workflow at a time on an
  output root. ``<root>/.workflow.lock`` is locked (``flock``) for as long as the Snakemake process
  lives, so a crashed or killed workflow leaves nothing blocking (the kernel drops its lock), and two
  workflows never write the same outputs or logs at once. The file records who holds it (pid, host,
  start, working directory, config), which a refusal names. Where the file system has no ``flock``,
  that record decides: a holder on this host whose process is gone is stale and replaced.

Standard library only (with ``mr2.common.io``): the workflow calls it when it is parsed.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..common.io import config_digest, process_alive
from .config import PipelineConfigError

LOCK = ".workflow.lock"
#: the locks this process holds: lock file -> its open descriptor (held until released or the process ends)
_HELD: dict[str, int] = {}
#: errors of ``flock`` on a file system that does not support it
_NO_FLOCK = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL)


class OutputRootBusy(PipelineConfigError):
    """Another workflow writes the output root now."""


def config_name(files: Iterable[str | os.PathLike], overrides: Mapping[str, Any] | None = None) -> str:
    """A config as a reader knows it: its files (relative to the working directory where under it) and
    the keys ``--config`` overrides, e.g. ``config/smoke.yaml --config seeds``."""
    here = Path.cwd()
    names = []
    for file in files:
        path = Path(file)
        try:
            path = path.resolve().relative_to(here.resolve())
        except ValueError:
            pass
        if str(path) not in names:
            names.append(str(path))
    name = " + ".join(names) or "no config file"
    return f"{name} --config {', '.join(sorted(overrides))}" if overrides else name


def differing_keys(first: Mapping[str, Any], second: Mapping[str, Any]) -> list[str]:
    """The top-level keys whose values differ between two configs, sorted."""
    return sorted(key for key in set(first) | set(second) if first.get(key) != second.get(key))


def read_record(lock: str | os.PathLike) -> dict[str, Any] | None:
    """The holder a lock file records (pid, host, start, workdir, config, digest), or None when there
    is none or it cannot be read (a file from another tool, one being written)."""
    try:
        record = json.loads(Path(lock).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def describe(record: Mapping[str, Any] | None) -> str:
    """A holder in words: ``pid 123 on host h since 2026-01-01 10:00:00, working directory /w, config c``."""
    if not record:
        return "a workflow whose record cannot be read"
    start = record.get("start")
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start)) if isinstance(start, (int, float)) else "?"
    return (f"pid {record.get('pid')} on host {record.get('host')} since {since}, working directory "
            f"{record.get('workdir')}, config {record.get('config')}")


def as_recorded(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` as ``pipeline_config.json`` records it (JSON: tuples as lists, keys as strings)."""
    return json.loads(json.dumps(config, sort_keys=True))


def check_owner(pipeline_config: str | os.PathLike, config: Mapping[str, Any], name: str) -> None:
    """Refuse an output root whose ``pipeline_config.json`` (``pipeline_config``) records another config
    than ``config`` (the config as that file would record it; ``name`` says where it comes from): a
    ``PipelineConfigError`` in one line naming both configs, the keys they differ in, and what to do.
    A root without the file is this config's to take; a file that is no JSON object is refused too."""
    path, config = Path(pipeline_config), as_recorded(config)
    if not path.exists():
        return
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        recorded, problem = None, " ".join(str(exc).split())
    else:
        problem = "not a JSON object"
    if not isinstance(recorded, dict):
        raise PipelineConfigError(f"{path} is not a pipeline config ({problem}): delete it to rebuild the tables, "
                                  f"figures and report under {path.parent} from this config ({name})")
    found, ours = config_digest(recorded), config_digest(config)
    if found == ours:
        return
    holder = read_record(path.parent / LOCK)
    theirs = f"digest {found[:12]}"
    if holder and holder.get("digest") == found:
        theirs = f"{holder.get('config')} from {holder.get('workdir')}, {theirs}"
    keys = differing_keys(recorded, config)
    raise PipelineConfigError(
        f"output root {path.parent} holds the results of another config ({theirs}) than this workflow's ({name}, "
        f"digest {ours[:12]}); they differ in {', '.join(keys[:8])}{' ...' if len(keys) > 8 else ''}: give this "
        f"config its own output_root, or delete {path} to rebuild the tables, figures and report there from this "
        "config (the runs are kept: each run's folder is named by its settings)")


def stale(record: Mapping[str, Any] | None) -> bool:
    """Whether a lock's record names a workflow that is gone: one that released it, one on this host
    whose process has ended, or an unreadable record. One on another host cannot be checked from here: not stale."""
    if not record or record.get("released"):
        return True
    pid = record.get("pid")
    return record.get("host") == socket.gethostname() and not (isinstance(pid, int) and pid > 0 and process_alive(pid))


def busy(root: Path, lock: Path, record: Mapping[str, Any] | None) -> OutputRootBusy:
    return OutputRootBusy(f"output root {root} is being written by another workflow ({describe(record)}; "
                          f"lock {lock}): wait for it to end (a stopped or crashed one releases it), or give this "
                          "config its own output_root")


def hold(pipeline_config: str | os.PathLike, config: Mapping[str, Any], name: str) -> Path:
    """Take the lock of the output root of ``pipeline_config`` (``<root>/.workflow.lock``) for this
    process until ``release`` or its end, recording pid, host, start, working directory, the config's
    ``name`` and digest; the lock file's path. Held by another live workflow: an ``OutputRootBusy``
    naming it. Holding it already: nothing to do."""
    root = Path(pipeline_config).parent
    about = {"config": name, "digest": config_digest(as_recorded(config))}
    root.mkdir(parents=True, exist_ok=True)
    lock = root / LOCK
    key = str(lock.resolve())
    if key in _HELD:
        return lock
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by the jobs (O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy(root, lock, read_record(lock)) from None
        except OSError as exc:  # no flock here: the record decides
            if exc.errno not in _NO_FLOCK:
                raise
            holder = read_record(lock)
            if not stale(holder):
                raise busy(root, lock, holder) from None
        record = {"pid": os.getpid(), "host": socket.gethostname(), "start": time.time(), "workdir": os.getcwd(),
                  **about}
        data = (json.dumps(record, indent=1) + "\n").encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
    except BaseException:
        os.close(fd)
        raise
    _HELD[key] = fd
    return lock


def release(pipeline_config: str | os.PathLike) -> None:
    """Give up the lock of the output root of ``pipeline_config`` if this process holds it. The file
    stays, its record marked released: it still names the config that last wrote the root
    (``check_owner`` quotes it)."""
    lock = Path(pipeline_config).parent / LOCK
    fd = _HELD.pop(str(lock.resolve()), None)
    if fd is None:
        return
    try:
        record = read_record(lock) or {}
        data = (json.dumps({**record, "released": time.time()}, indent=1) + "\n").encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
    finally:
        os.close(fd)  # drops the flock
