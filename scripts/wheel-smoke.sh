#!/usr/bin/env bash
# Install check: build the wheel with maturin (offline once `cargo fetch --locked` has run), install
# it in a fresh venv with `--no-index` (nothing but the wheel), and scan the mission fixture with the
# gpu-homogenize that pip put on PATH. Prints how long the wheel build and the wheel install took.
# Env: PROFILE (default dev; `release` for the wheel you ship), WHEEL_DIR (keep the wheel there),
# MATURIN (a maturin to use; else the one on PATH, else maturin 1.16.0 pip-installed into a throwaway venv).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f s", b - a }'; }

maturin=${MATURIN:-$(command -v maturin || true)}
if [ -z "$maturin" ]; then
    python3 -m venv "$work/build"
    "$work/build/bin/pip" install -q maturin==1.16.0  # the version release.yml uses
    maturin=$work/build/bin/maturin
fi
cargo fetch --locked
t0=$(now)
"$maturin" build --offline --locked --profile "${PROFILE:-dev}" --out "$work/wheels"
t1=$(now)
wheel=$(ls "$work"/wheels/*.whl)
echo "wheel: built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB) in $(secs "$t0" "$t1")"

python3 -m venv "$work/venv"
t0=$(now)
"$work/venv/bin/pip" install -q --no-index "$wheel"
t1=$(now)
echo "wheel: pip install --no-index into a fresh venv in $(secs "$t0" "$t1")"
if [ -n "${WHEEL_DIR:-}" ]; then
    mkdir -p "$WHEEL_DIR" && cp "$wheel" "$WHEEL_DIR/"
fi

# The binary pip installed, and the version the tag must carry (release.yml checks the same).
[ "$(PATH="$work/venv/bin:$PATH" command -v gpu-homogenize)" = "$work/venv/bin/gpu-homogenize" ]
crate_version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
"$work/venv/bin/gpu-homogenize" --version | grep -qx "gpu-homogenize $crate_version"

cp -r fixtures/superwhisper-v6 "$work/mission"
cd "$work/mission"
set +e
PATH="$work/venv/bin:$PATH" gpu-homogenize scan -q --statistics
status=$?
set -e
[ "$status" = 1 ] && echo "wheel: gpu-homogenize $crate_version on PATH, mission scan exit 1 (findings)"
