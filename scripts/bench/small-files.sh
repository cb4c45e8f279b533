#!/usr/bin/env bash
# Issue 38's "100,000 small files": peak RSS and time of a cold scan, the run that writes the
# cache, a warm scan and `fix`, on a generated tree (N files of 60-200 bytes in folders of 100,
# one in ten a GPU script with `.cuda(1)`). Prints one line per run.
#
#   scripts/bench/small-files.sh [N]        # N defaults to 100000
#
# Env: GH_BIN (default target/release/gpu-homogenize, built if missing), WORK (default a
# temporary directory, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-100000}
GH_BIN=${GH_BIN:-target/release/gpu-homogenize}
[ -x "$GH_BIN" ] || cargo build --release --locked --quiet
GH_BIN=$(realpath "$GH_BIN")
work=${WORK:-$(mktemp -d)}
[ -n "${WORK:-}" ] || trap 'rm -rf "$work"' EXIT
tree=$work/tree
rm -rf "$tree" && mkdir -p "$tree/.git"
python3 - "$tree" "$n" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for k in range(n):
    d = os.path.join(root, f"pkg{k // 100:04d}")
    os.makedirs(d, exist_ok=True)
    if k % 10 == 0:
        text = f'"""Script {k}."""\nimport torch\n\n\ndef main():\n    return torch.zeros({k % 7 + 1}).cuda(1)\n\n\nif __name__ == "__main__":\n    main()\n'
    else:
        text = f'"""Module {k}."""\n\n\ndef f{k}(x):\n    return x + {k}\n'
    with open(os.path.join(d, f"m{k % 100:03d}.py"), "w") as f:
        f.write(text)
PY
measure() {
    local what=$1 dir=$2
    shift 2
    (cd "$dir" && /usr/bin/time -f "$what: %e s, peak %M KiB" "$GH_BIN" "$@" >/dev/null 2>"$work/time.txt" || true)
    tail -1 "$work/time.txt"
}
measure "cold scan" "$tree" scan --no-cache .
measure "first cached scan" "$tree" scan .
measure "warm scan" "$tree" scan .
rm -rf "$work/fix" && cp -r "$tree" "$work/fix" && rm -rf "$work/fix/.gpu-homogenize"
measure "fix" "$work/fix" fix --gpu off --no-journal .
