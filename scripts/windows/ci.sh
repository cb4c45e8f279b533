#!/usr/bin/env bash
# CI's Windows step: build gpu-homogenize for x86_64-pc-windows-gnu, run its tests under Wine
# (the GPU tests on the simulated driver built as nvcuda.dll / nvml.dll), then compare the
# mission through the Linux binary and the Windows .exe (scripts/windows/compare.py).
#
# Needs the shared recipe (../shared/windows-cross/setup.sh: Debian packages through apt-get,
# crates through crates.io, both fetched once into WINCROSS) and the Linux debug build that
# `cargo test` made before (.ci/run runs this after it). Each stage prints its time.
set -euo pipefail
cd "$(dirname "$0")/../.."
t0=$(date +%s)
stage() { echo "==> windows [$(( $(date +%s) - t0 )) s] $*"; }

stage "toolchain and build (scripts/windows/test.sh)"
scripts/windows/test.sh test --no-run
stage "tests under Wine"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
scripts/windows/test.sh test 2>&1 | tee "$log"
awk '/^test result:/ { p += $4; f += $6; i += $8 } END { printf "windows tests: %d passed, %d failed, %d ignored\n", p, f, i }' "$log"

stage "mission: Linux and Windows compared"
cargo build --locked --quiet
cargo build --locked --quiet -p fakegpu --target-dir target/fakegpu
WINCROSS=${WINCROSS:-${TMPDIR:-/tmp}/wincross}
# shellcheck disable=SC1091
source "$WINCROSS/env.sh"
win=${CARGO_TARGET_DIR_WINDOWS:-$PWD/target-win}/x86_64-pc-windows-gnu/debug
python3 scripts/windows/compare.py target/debug/gpu-homogenize "$win/gpu-homogenize.exe" \
    target/fakegpu/debug/libfakegpu.so "$win/fakegpu.dll"
stage "done"
