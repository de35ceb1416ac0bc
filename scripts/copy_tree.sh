#!/usr/bin/env bash
# Copy this working tree's tracked and untracked, not ignored files into DEST (made if missing):
# the tree a mutation run or a recheck of its survivors works on, never the repository itself. A
# symbolic link is copied as a link (never the file it points to), and a DEST inside the working tree
# is refused (the next copy would take in this one).
#
#   scripts/copy_tree.sh DEST
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: scripts/copy_tree.sh DEST" >&2; exit 2; }
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
DEST="$(realpath -m -- "$1")"
case "$DEST/" in
    "$ROOT/"*) echo "copy_tree: $1 is inside the working tree $ROOT: give a folder outside it" >&2; exit 2 ;;
esac
mkdir -p -- "$DEST"
cd "$ROOT"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' name; do
    if [ -L "$name" ] || [ -f "$name" ]; then
        cp --parents -P -p -- "$name" "$DEST"
    fi
done
exit 0
