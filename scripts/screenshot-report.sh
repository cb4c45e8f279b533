#!/usr/bin/env bash
# Render the HTML coordinator report of a tree to a PNG with headless Chromium, offline, to
# check what a coordinator will see. Usage: scripts/screenshot-report.sh [TREE] [OUT.png]
# TREE defaults to a scratch copy of fixtures/superwhisper-v6 taken through the mission:
# 13 core modules fixed, then the rest, then one file broken again by hand.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$repo/target/report-screenshot.png}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! command -v chromium >/dev/null 2>&1; then
    apt-get update && apt-get install -y chromium
fi

cargo build --quiet --manifest-path "$repo/Cargo.toml"
bin=$repo/target/debug/gpu-homogenize

tree=${1:-}
if [ -z "$tree" ]; then
    tree=$work/superwhisper-v6
    cp -r "$repo/fixtures/superwhisper-v6" "$tree"
    (
        cd "$tree"
        # The 13 files of the first phase, as listed in its gpu-homogenize.toml.
        mapfile -t core < <(sed -n '/name  = "Core modules"/,/^]/p' gpu-homogenize.toml | grep -o '"[^"]*\.py"' | tr -d '"')
        "$bin" fix --gpu off "${core[@]}" >/dev/null
        "$bin" fix --gpu off . >/dev/null
        sed -i 's/to(device="cuda:0")/to(device="cuda:1")/' TTS/tts_handler_coqui.py
    )
fi

"$bin" report "$tree" --format html --out "$work/report.html"
chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run \
    --user-data-dir="$work/profile" --screenshot="$out" --window-size=1200,1400 \
    "file://$work/report.html"
echo "wrote $out"
