#!/usr/bin/env bash
# Links leading out of the tree, under Wine: what the Windows build does with them.
#
#   scripts/windows/links.sh WINDOWS_EXE
#
# A Windows program under Wine 8 cannot make a link itself: CreateSymbolicLinkW returns success
# and makes nothing, and FSCTL_SET_REPARSE_POINT (a junction) fails with ERROR_NOT_SUPPORTED.
# The links are therefore made on the Linux side; Wine shows a unix link to a directory as a
# reparse point in a directory listing only; NtCreateFile follows every unix link, even with
# FILE_OPEN_REPARSE_POINT, and the handle shows the target's attributes. So the Windows build
# cannot see these links under Wine (on Windows the open stops at the reparse point): this
# script is a probe of that limit (docs/windows.md), not a check. It says, per case, whether the
# file outside the tree was written ("written through (Wine limit)") and exits 0.
set -euo pipefail
exe=$(realpath "$1")
WINE=${WINE:-/usr/lib/wine/wine64}
export WINEDEBUG=-all
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bad='import os
import torch
os.environ["CUDA_VISIBLE_DEVICES"] = "0"
x = torch.device("cuda:1")
'
check_untouched() {
    if [ "$(cat "$1")" != "$bad" ]; then
        echo "written through (Wine limit): $2: $1 outside the tree was changed"
    else
        echo "ok: $2: the file outside the tree is untouched"
    fi
}

# 1. A link to a directory outside the tree (a reparse point under Wine): never entered.
mkdir -p "$work/1/outside" "$work/1/tree/.git"
printf '%s' "$bad" > "$work/1/outside/x.py"
printf '%s' "$bad" > "$work/1/tree/a.py"
ln -s ../outside "$work/1/tree/link"
(cd "$work/1/tree" && "$WINE" "$exe" fix --gpu off --no-journal . > ../out.txt 2>&1) || true
for arg in link link/x.py; do
    (cd "$work/1/tree" && "$WINE" "$exe" fix --gpu off --no-journal "$arg" >> ../out.txt 2>&1) || true
done
check_untouched "$work/1/outside/x.py" "directory link (reparse point)"

# 2. A link to a file outside the tree. Under Wine it looks like a plain file (no reparse
#    point), so the Windows build cannot tell it from one: what must hold is that the file
#    outside is never written (the rewrite replaces the name in the tree, by handle).
mkdir -p "$work/2/outside" "$work/2/tree/.git"
printf '%s' "$bad" > "$work/2/outside/x.py"
ln -s ../outside/x.py "$work/2/tree/x.py"
(cd "$work/2/tree" && "$WINE" "$exe" fix --gpu off --no-journal . > ../out.txt 2>&1) || true
check_untouched "$work/2/outside/x.py" "file link (a plain file under Wine)"
if [ -L "$work/2/tree/x.py" ]; then
    echo "note: file link: left in place ($(tr '\n' ' ' < "$work/2/out.txt" | cut -c1-200))"
else
    echo "note: file link: replaced by a regular file in the tree (Wine hides the link)"
fi

# 3. The journal a link to a file outside: refused, its target untouched.
mkdir -p "$work/3/tree/.gpu-homogenize" "$work/3/tree/.git"
printf 'keep\n' > "$work/3/victim"
printf '%s' "$bad" > "$work/3/tree/a.py"
ln -s ../../victim "$work/3/tree/.gpu-homogenize/journal.jsonl"
(cd "$work/3/tree" && "$WINE" "$exe" check --gpu off > ../out.txt 2>&1) || true
if [ "$(cat "$work/3/victim")" != keep ]; then
    echo "written through (Wine limit): journal link: the file outside the tree was written"
else
    echo "ok: journal link: the file outside the tree is untouched"
fi

# 4. The backup directory a link to a directory outside the tree: nothing written through it.
mkdir -p "$work/4/outside" "$work/4/tree/.git"
printf '%s' "$bad" > "$work/4/tree/a.py"
ln -s ../outside "$work/4/tree/bak"
(cd "$work/4/tree" && "$WINE" "$exe" fix --gpu off --no-journal --backup-dir bak > ../out.txt 2>&1) || true
if [ -n "$(ls -A "$work/4/outside")" ]; then
    echo "written through (Wine limit): backup-dir link: $(ls -A "$work/4/outside" | tr '\n' ' ')"
else
    echo "ok: backup-dir link: nothing written outside the tree"
fi
