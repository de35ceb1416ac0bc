# Sourced by run.sh and test.sh (and by hand: `source scripts/env.sh`): the shared venv's tools on
# PATH and THIS clone's root first on PYTHONPATH, so `python -m mr2`, `python -m theory`, the
# workflow's jobs, the tests and the notebooks' kernels run this clone's code, whichever other clone
# (another branch, a colleague's copy) shares the venv or was once installed into it.
MR2_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${MR2_VENV:-$HOME/.cache/mr2/venv}"
export PATH="$VENV/bin:$PATH"
export PYTHONPATH="$MR2_ROOT${PYTHONPATH:+:$PYTHONPATH}"
