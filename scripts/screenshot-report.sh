#!/usr/bin/env bash
# Render the HTML coordinator report of a tree to PNGs with headless Chromium, offline, to
# check what a coordinator will see at each width (a phone, a narrow window, a desktop).
# Usage: scripts/screenshot-report.sh [TREE] [OUT-PREFIX]   -> OUT-PREFIX-360.png, -600, -1400
# TREE defaults to a scratch copy of fixtures/superwhisper-v6 taken through the mission:
# 13 core modules fixed, then the rest, then one file broken again by hand. With STAGE=mid it
# stops mid-mission instead: the core fixed, then a `check` of everything (the 27 test scripts
# still failing: the most alerts a report shows). WIDTHS overrides the widths.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$repo/target/report-screenshot}
out=${out%.png}
widths=${WIDTHS:-360 600 1400}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! command -v chromium >/dev/null 2>&1; then
    apt-get update && apt-get install -y chromium
fi

cargo build --quiet --manifest-path "$repo/Cargo.toml"
bin=${CARGO_TARGET_DIR:-$repo/target}/debug/gpu-homogenize

tree=${1:-}
if [ -z "$tree" ]; then
    tree=$work/superwhisper-v6
    cp -r "$repo/fixtures/superwhisper-v6" "$tree"
    (
        cd "$tree"
        # The 13 files of the first phase, as listed in its gpu-homogenize.toml.
        mapfile -t core < <(sed -n '/name  = "Core modules"/,/^]/p' gpu-homogenize.toml | grep -o '"[^"]*\.py"' | tr -d '"')
        "$bin" fix --gpu off "${core[@]}" >/dev/null
        if [ "${STAGE:-}" = mid ]; then
            "$bin" check --gpu off . >/dev/null || true
        else
            "$bin" fix --gpu off . >/dev/null
            sed -i 's/to(device="cuda:0")/to(device="cuda:1")/' TTS/tts_handler_coqui.py
        fi
    )
fi

"$bin" report "$tree" --format html --out "$work/report.html"
for width in $widths; do
    chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
        --user-data-dir="$work/profile" --screenshot="$out-$width.png" --window-size="$width,1800" \
        "file://$work/report.html" 2>/dev/null
    echo "wrote $out-$width.png"
done
