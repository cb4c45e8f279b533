# Shared by the torture scripts: the binary, a file that `fix` rewrites, and counters.
set -u
BIN=${GH_BIN:-$(cd "$(dirname "$0")/../.." && pwd)/target/debug/gpu-homogenize}
[ -x "$BIN" ] || { echo "build first (cargo build), or set GH_BIN" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
PASS=0
FAIL=0

# A Python file that `fix` rewrites (it selects cuda:1 by hand).
bad_py() {
    printf 'import os\nimport torch\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\nx = torch.device("cuda:1")\n'
}

ok() { PASS=$((PASS + 1)); echo "  ok   $*"; }
bad() { FAIL=$((FAIL + 1)); echo "  FAIL $*"; }
expect() { if eval "$1"; then ok "$2"; else bad "$2"; fi; }
finish() { echo "$(basename "$0"): $PASS passed, $FAIL failed"; [ "$FAIL" -eq 0 ]; }
