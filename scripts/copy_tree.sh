#!/usr/bin/env bash
# Copy this working tree's tracked and untracked, not ignored files into DEST (made if missing):
# the tree a mutation run or a recheck of its survivors works on, never the repository itself.
#
#   scripts/copy_tree.sh DEST
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: scripts/copy_tree.sh DEST" >&2; exit 2; }
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$1"
DEST="$(cd "$1" && pwd)"
cd "$ROOT"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' name; do
    [ -f "$name" ] && cp --parents -p -- "$name" "$DEST"
done
exit 0
