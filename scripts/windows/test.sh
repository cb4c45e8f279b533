#!/usr/bin/env bash
# Build gpu-homogenize for x86_64-pc-windows-gnu and run its tests under Wine, on Linux.
#
# The toolchain (Debian's rustc 1.96 with the standard library's source, MinGW-w64, Wine 8) is
# installed and prepared by the shared recipe (../shared/windows-cross/setup.sh, idempotent).
# The Windows build has its own target directory (target-win/), never the Linux one.
#
#   scripts/windows/test.sh            # build and run every test (cargo test)
#   scripts/windows/test.sh check      # only check that the crate builds for Windows
#   scripts/windows/test.sh test NAME  # cargo test's filter, as usual
#
# Before `test`, the simulated NVIDIA driver (fixtures/fakegpu) is built as fakegpu.dll and named
# in FAKEGPU_DLL: the GPU tests copy it as nvcuda.dll and nvml.dll (a test under Wine cannot
# start the Linux cargo to build it, as tests/it/gpu.rs does on Linux).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
setup=${WINCROSS_SETUP:-$root/../shared/windows-cross/setup.sh}
if [ ! -f "$setup" ]; then
    echo "scripts/windows/test.sh: $setup not found (set WINCROSS_SETUP to the recipe)" >&2
    exit 2
fi
WINCROSS=${WINCROSS:-${TMPDIR:-/tmp}/wincross}
export WINCROSS
if [ ! -f "$WINCROSS/env.sh" ] || [ ! -f "$WINCROSS/wineprefix/system.reg" ]; then
    bash "$setup"
fi
# shellcheck disable=SC1091
source "$WINCROSS/env.sh"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR_WINDOWS:-$root/target-win}
cmd=${1:-test}
shift || true
flags=(-Zbuild-std=std,panic_abort --target x86_64-pc-windows-gnu --locked)
case "$cmd" in
    check) cargo check "${flags[@]}" --all-targets "$@" ;;
    build) cargo build "${flags[@]}" "$@" ;;
    test)
        cargo build "${flags[@]}" -p fakegpu
        dll=$CARGO_TARGET_DIR/x86_64-pc-windows-gnu/debug/fakegpu.dll
        # The Windows name of the Linux path: Wine maps / to drive Z:.
        FAKEGPU_DLL="Z:$(realpath "$dll" | tr / '\\')"
        export FAKEGPU_DLL
        cargo test "${flags[@]}" "$@"
        ;;
    *) echo "usage: $0 [check|build|test] [cargo args]" >&2; exit 2 ;;
esac
