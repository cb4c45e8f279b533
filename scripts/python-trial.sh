#!/usr/bin/env bash
# Python sanity trial on unpacked application sources (one directory per app under SRC, e.g. the
# sdists scripts/gates-trial.sh unpacks into $TRIAL_DIR/src): each app is copied, fixed
# (`fix --no-journal --no-cache --gpu off`), every changed .py is byte-compiled, and `fix` runs
# again on the result. Prints one row per app and a total; exits 1 when a rewrite does not
# compile or the second `fix` changes anything.
#
# Env: GH_BIN (default target/release/gpu-homogenize), SRC (default target/gates-trial/src),
#      WORK (default: a temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."
GH_BIN=$(realpath "${GH_BIN:-target/release/gpu-homogenize}")
SRC=$(realpath "${SRC:-target/gates-trial/src}")
WORK=${WORK:-$(mktemp -d)}
commit() { git -C "$1" add -A >/dev/null && git -C "$1" -c user.email=t@t -c user.name=t commit -qm "$2" --allow-empty; }
total=0 fails=0 second=0
for app in "$SRC"/*/; do
    name=$(basename "$app")
    rm -rf "${WORK:?}/$name" && cp -r "$app" "$WORK/$name"
    git -C "$WORK/$name" init -q && commit "$WORK/$name" base
    "$GH_BIN" fix --no-journal --no-cache --gpu off "$WORK/$name" >/dev/null 2>&1 || true
    mapfile -t changed < <(git -C "$WORK/$name" diff --name-only -- '*.py')
    for f in "${changed[@]}"; do
        python3 -m py_compile "$WORK/$name/$f" 2>/dev/null || { fails=$((fails + 1)); echo "does not compile: $name/$f"; }
    done
    commit "$WORK/$name" fixed
    "$GH_BIN" fix --no-journal --no-cache --gpu off "$WORK/$name" >/dev/null 2>&1 || true
    again=$(git -C "$WORK/$name" status --porcelain -- '*.py' | wc -l)
    total=$((total + ${#changed[@]})) second=$((second + again))
    echo "$name | changed=${#changed[@]} second_fix_changed=$again"
done
echo "total | changed=$total py_compile_failures=$fails second_fix_changed=$second"
[[ $fails == 0 && $second == 0 ]]
