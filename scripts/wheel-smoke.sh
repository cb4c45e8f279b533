#!/usr/bin/env bash
# Install check: build the wheel with maturin (offline once `cargo fetch --locked` has run), install
# it in a fresh venv, and scan the mission fixture with the gpu-homogenize that pip put on PATH.
# Env: PROFILE (default dev; `release` for the wheel you ship).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/build"
"$work/build/bin/pip" install -q maturin
cargo fetch --locked
"$work/build/bin/maturin" build --offline --locked --profile "${PROFILE:-dev}" --out "$work/wheels"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --no-index "$work"/wheels/*.whl
cp -r fixtures/superwhisper-v6 "$work/mission"
cd "$work/mission"
set +e
PATH="$work/venv/bin:$PATH" gpu-homogenize scan -q --statistics
status=$?
set -e
[ "$(PATH="$work/venv/bin:$PATH" command -v gpu-homogenize)" = "$work/venv/bin/gpu-homogenize" ]
[ "$status" = 1 ] && echo "wheel: gpu-homogenize on PATH, mission scan exit 1 (findings)"
