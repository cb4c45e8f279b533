#!/usr/bin/env bash
# Links leading out of the tree, under Wine: what the Windows build does with them.
#
#   scripts/windows/links.sh WINDOWS_EXE
#
# A Windows program under Wine 8 cannot make a link itself: CreateSymbolicLinkW returns success
# and makes nothing, and FSCTL_SET_REPARSE_POINT (a junction) fails with ERROR_NOT_SUPPORTED.
# The links are therefore made on the Linux side; Wine shows a unix link to a directory as a
# reparse point (FILE_ATTRIBUTE_REPARSE_POINT), as Windows shows a symbolic link or a junction,
# and a unix link to a file as a plain file (its target's attributes). Each case says which
# promise it exercises; the script fails when a file outside the tree changes.
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
fail=0
check_untouched() {
    if [ "$(cat "$1")" != "$bad" ]; then
        echo "FAIL: $2: $1 outside the tree was changed"
        fail=1
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
if ! grep -q "fixed\|Fixed" "$work/1/out.txt"; then
    echo "FAIL: the file in the tree was not fixed:"; cat "$work/1/out.txt"; fail=1
fi

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
    echo "FAIL: journal link: the file outside the tree was written"; fail=1
else
    echo "ok: journal link: the file outside the tree is untouched"
fi

# 4. The backup directory a link to a directory outside the tree: nothing written through it.
mkdir -p "$work/4/outside" "$work/4/tree/.git"
printf '%s' "$bad" > "$work/4/tree/a.py"
ln -s ../outside "$work/4/tree/bak"
(cd "$work/4/tree" && "$WINE" "$exe" fix --gpu off --no-journal --backup-dir bak > ../out.txt 2>&1) || true
if [ -n "$(ls -A "$work/4/outside")" ]; then
    echo "FAIL: backup-dir link: written through: $(ls -A "$work/4/outside")"; fail=1
else
    echo "ok: backup-dir link: nothing written outside the tree"
fi
exit $fail
