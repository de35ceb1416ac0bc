#!/usr/bin/env bash
# Idempotent set-up on a fresh Debian machine: system data package, a Python venv outside the
# clone (reused across runs and clones: no new multi-GB environment per run) with mr2's
# dependencies. mr2 itself is not installed into the shared venv: each clone runs its own code with
# its root first on PYTHONPATH (scripts/env.sh; `python -m mr2` from the clone's root does the same).
#   MR2_VENV     where the venv lives      (default: ~/.cache/mr2/venv)
#   MR2_LOCKED=1 install the exact versions of requirements.lock instead of the ranges
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${MR2_VENV:-$HOME/.cache/mr2/venv}"
PY="${PYTHON:-python3}"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }

# Fashion-MNIST from Debian (offline data of the embedded default).
if [ ! -d /usr/share/datasets/fashion-mnist ]; then
  echo "[setup] installing Debian's dataset-fashion-mnist"
  as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist \
    || echo "[setup] WARNING: could not install dataset-fashion-mnist (no root?); fashion_mnist will need download: true" >&2
fi

# Chromium from Debian: tests/test_report_page.py measures the HTML report in it (skipped without it).
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  echo "[setup] installing Debian's chromium (headless browser for the report-page test)"
  as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium \
    || echo "[setup] WARNING: could not install chromium (no root?); tests/test_report_page.py will be skipped" >&2
fi

"$PY" -c 'import sys; assert sys.version_info >= (3, 11), "mr2 needs Python >= 3.11, found " + sys.version'
# Debian's own Python makes venvs only with its pythonX.Y-venv package (ensurepip).
if ! "$PY" -c 'import ensurepip' 2>/dev/null; then
  PKG="python$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv"
  echo "[setup] installing Debian's $PKG (venv needs ensurepip)"
  as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$PKG" \
    || { echo "[setup] ERROR: $PY has no ensurepip and $PKG could not be installed (no root?)" >&2; exit 1; }
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating venv at $VENV"
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
elif ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then  # left without pip by a failed creation
  echo "[setup] repairing venv at $VENV (no pip)"
  "$VENV/bin/python" -m ensurepip --upgrade >/dev/null || "$PY" -m venv --clear "$VENV"
fi
REQ=requirements.txt
[ "${MR2_LOCKED:-0}" = 1 ] && REQ=requirements.lock
STAMP="$VENV/.mr2-$(sha256sum "$REQ" | cut -c1-16)"
if [ ! -f "$STAMP" ]; then
  echo "[setup] installing $REQ into $VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip "setuptools>=68"
  "$VENV/bin/python" -m pip install -q -r "$REQ"
  touch "$STAMP"
fi
echo "[setup] ready: $VENV"
