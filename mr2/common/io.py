"""Atomic file output (a crash never leaves a half-written result behind) and YAML reading."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import yaml


def _new_file_mode() -> int:
    """0o666 & ~umask: the mode a plain ``open(path, "w")`` gives a new file."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


class DiskFullError(OSError):
    """An output could not be written: no space left on its file system (``ENOSPC``)."""


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path`` (``.<name>.<pid>.<random>.tmp``); on success it is
    flushed to disk, given the mode a plain ``open()`` would give (``0o666 & ~umask``, not
    ``mkstemp``'s 0600) and renamed over ``path`` atomically. A full disk (``ENOSPC``) anywhere in
    this is a ``DiskFullError`` naming ``path`` in one line; nothing is left behind. A folder at
    ``path``, or a file where one of its folders should be, is a ``ValueError`` naming both."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"cannot write {path}: it is a folder; give a file name")
    blocker = next(p for p in path.parents if p.exists() or p == p.parent)  # the nearest existing ancestor
    if blocker.exists() and not blocker.is_dir():
        raise ValueError(f"cannot write {path}: {blocker} is a file, not a folder")
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        yield Path(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, _new_file_mode())
        os.replace(tmp, path)
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        raise DiskFullError(errno.ENOSPC, f"the disk is full: could not write {path} (no space left on device); "
                                          "free space and run the step again") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def writable_folder(path: str | os.PathLike, what: str = "output folder") -> Path:
    """``path``, made with its parents and checked writable by creating and removing a temporary
    file in it, before a step's long work starts; a file in the way, a read-only file system or a
    missing permission is a ``ValueError`` naming ``what`` and ``path`` in one line (a full disk: a
    ``DiskFullError``)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"the {what} {path} is a file, not a folder; give a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-test.", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise DiskFullError(errno.ENOSPC, f"the disk is full: could not write into {path} (no space left on "
                                              "device); free space and run the step again") from None
        raise ValueError(f"cannot write the {what} {path}: {exc.strerror or exc}") from None
    return path


def os_error_line(exc: OSError) -> str:
    """An ``OSError`` as one line naming its file: ``<file>: <reason>`` (``one_line`` of it otherwise)."""
    if exc.filename is not None and exc.strerror:
        other = f" -> {exc.filename2}" if exc.filename2 is not None else ""
        return f"{exc.filename}{other}: {exc.strerror}"
    return " ".join(str(exc).split())


def config_digest(config: Any) -> str:
    """The SHA-256 of ``config`` as canonical JSON (sorted keys, no spaces, ASCII): the name of a
    pipeline config that its outputs record and the results steps compare (``mr2 aggregate
    --config-digest``); the same config gives the same digest in every session and on every machine."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def load_json_file(path: str | os.PathLike):
    """The JSON in file ``path``; a missing file, or one that is not JSON (cut short, damaged), is one
    line naming it."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON ({' '.join(str(exc).split())}): damaged or cut short") from None


MISSING, DIFFERS = "missing", "differs"


def compare_stated(stated: Any, other: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Where a config ``other`` does not hold what the nested mapping ``stated`` states: (dotted key,
    ``MISSING``) for a key ``other`` lacks (not looked into further), (dotted key, ``DIFFERS``) for a
    value it holds otherwise; keys ``stated`` leaves out are not compared."""
    out: list[tuple[str, str]] = []
    for key, value in stated.items():
        path = f"{prefix}{key}"
        if not isinstance(other, dict) or key not in other:
            out.append((path, MISSING))
        elif isinstance(value, dict) and isinstance(other[key], dict):
            out.extend(compare_stated(value, other[key], path + "."))
        elif value != other[key]:
            out.append((path, DIFFERS))
    return out


def check_built_from(path: str | os.PathLike, digest: str) -> None:
    """The pipeline config recorded at ``path`` (``pipeline_config.json``, JSON) must be the one whose
    ``config_digest`` is ``digest``: the outputs under an output root are built from one config. A
    ``ValueError`` naming the file, both digests and what to do otherwise (another working directory,
    or another config, shares the output root)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path} (the pipeline config the results are built from)")
    found = config_digest(load_json_file(path))
    if found != digest:
        raise ValueError(f"{path} records another pipeline config (digest {found[:12]}) than this run's "
                         f"({digest[:12]}): the tables, figures and report under {path.parent} would mix two "
                         "configs (another working directory writes to the same output_root?); give this config "
                         f"its own output_root, or delete {path} to rebuild them from this config")


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (a number no process can have: no)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_stray_temporaries(*paths: str | os.PathLike) -> None:
    """Delete the temporaries ``atomic_path`` left next to each of ``paths`` when a writer was
    killed: ``.<name>.<pid>.<random>.tmp`` of exactly these targets whose process is gone
    (a live writer's, and any other target's, are left alone)."""
    for path in map(Path, paths):
        if not path.parent.is_dir():
            continue
        pattern = re.compile(re.escape(f".{path.name}.") + r"(\d+)\.[^./]+\.tmp")
        for tmp in path.parent.iterdir():
            found = pattern.fullmatch(tmp.name)
            if found and int(found.group(1)) != os.getpid() and not process_alive(int(found.group(1))):
                tmp.unlink(missing_ok=True)


def save_text(text: str, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def save_yaml(obj: Any, path: str | os.PathLike) -> None:
    save_text(yaml.safe_dump(obj, sort_keys=False), path)


def save_json(obj: Any, path: str | os.PathLike) -> None:
    save_text(json.dumps(obj, indent=2, sort_keys=False) + "\n", path)


#: what makes a spreadsheet read a cell as a formula (``=HYPERLINK(...)``, ``+``, ``-``, ``@``, tab, CR)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def spreadsheet_safe(value):
    """``value`` as a spreadsheet shows it and never runs it: a string starting with one of
    ``FORMULA_START`` gets a leading ``'`` (``'=HYPERLINK(...)``), unless it is a plain number
    (``-0.5``); anything else is returned unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def save_csv(frame, path: str | os.PathLike) -> None:
    """Write a pandas DataFrame as CSV atomically, every text cell ``spreadsheet_safe``."""
    text = frame.select_dtypes(include=["object", "string"]).columns
    if len(text):
        frame = frame.copy()
        frame[text] = frame[text].map(spreadsheet_safe)
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, but reading ``1e-6`` as a float (YAML 1.2), not as a string."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][-+]?[0-9]+)?$|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$"),
    list("-+0123456789."),
)


def load_yaml(text: str):
    """Parse YAML text with numbers such as ``1e-6`` read as floats."""
    return yaml.load(text, Loader=_Loader)


def load_yaml_file(path: str | os.PathLike):
    """``load_yaml`` of the file ``path``; a missing file or a YAML syntax error is one line naming it."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        return load_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise ValueError(f"{path} is not valid YAML ({problem})") from None


def block_lines(text: str, begin: str, end: str, where: str = "the README") -> tuple[int, int] | None:
    """The line numbers of the marker lines of the block ``begin`` ... ``end`` in ``text``, or None
    when either marker is not there as a line of its own. A marker counts only as a whole line (one
    quoted in a sentence or a code span is text); a marker line found twice, or the end before the
    begin, is a ``ValueError`` naming ``where`` and the marker: which lines the block spans is then
    unclear, and filling it could swallow lines outside it."""
    lines = [line.rstrip() for line in text.splitlines()]
    starts = [i for i, line in enumerate(lines) if line == begin]
    stops = [i for i, line in enumerate(lines) if line == end]
    if not starts or not stops:
        return None
    for marker, found in ((begin, starts), (end, stops)):
        if len(found) > 1:
            raise ValueError(f"{where} has the marker line {marker} {len(found)} times (lines "
                             f"{', '.join(str(i + 1) for i in found)}); keep one")
    if stops[0] < starts[0]:
        raise ValueError(f"{where}: the marker line {end} (line {stops[0] + 1}) comes before {begin} "
                         f"(line {starts[0] + 1})")
    return starts[0], stops[0]


#: a marker line of a generated block (``<!-- results:default -->``, ``<!-- /verdicts -->``)
MARKER_LINE = re.compile(r"<!-- /?[A-Za-z][\w:.-]* -->")


def check_no_marker_lines(body: str, what: str) -> None:
    """A ``ValueError`` naming ``what`` when ``body`` holds a line that is a block's marker (any
    ``MARKER_LINE``): pasted into a page, the next update would take it for a block's edge."""
    found = [line.rstrip() for line in body.split("\n") if MARKER_LINE.fullmatch(line.strip())]
    if found:
        raise ValueError(f"{what} holds the marker line {found[0]} (a generated block's edge): remove it; "
                         "nothing was written")


def fill_block_lines(text: str, begin: str, end: str, body: str | None, where: str = "the README") -> str:
    """``text`` with the lines between the marker lines ``begin`` and ``end`` (``block_lines``)
    replaced by ``body``, or with ``body`` None the block removed, its marker lines too; every line
    outside the block is kept byte for byte. A ``ValueError`` naming ``where`` when there is no such
    block, or when ``body`` holds a marker line, its own or another block's (``check_no_marker_lines``:
    the next update would take it for a block's edge)."""
    found = block_lines(text, begin, end, where)
    if found is None:
        raise ValueError(f"{where} has no block {begin} ... {end} to fill (each marker on a line of its own)")
    new = [] if body is None else body.strip("\n").split("\n")
    if {begin, end} & {line.rstrip() for line in new}:
        raise ValueError(f"the new contents of {where}'s block {begin} hold one of its marker lines")
    check_no_marker_lines("\n".join(new), f"the new contents of {where}'s block {begin}")
    lines = text.splitlines(keepends=True)
    first, last = found
    inside = [lines[first], *(line + "\n" for line in new), lines[last]] if body is not None else []
    return "".join(lines[:first] + inside + lines[last + 1:])
