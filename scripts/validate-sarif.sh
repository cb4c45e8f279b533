#!/usr/bin/env bash
# SARIF check: the SARIF of the mission fixture and of a tree whose paths have spaces and
# accents must pass Microsoft's SARIF validator (`@microsoft/sarif-multitool validate`, from
# npm, runs offline) with no error and no warning. Env: GH_BIN (default
# target/debug/gpu-homogenize), MULTITOOL_DIR (where the npm package is installed).
set -euo pipefail
cd "$(dirname "$0")/.."
GH_BIN=$(realpath "${GH_BIN:-target/debug/gpu-homogenize}")
MULTITOOL_DIR=${MULTITOOL_DIR:-target/sarif-multitool}
if [ ! -x "$MULTITOOL_DIR/node_modules/.bin/sarif-multitool" ]; then
    mkdir -p "$MULTITOOL_DIR"
    (cd "$MULTITOOL_DIR" && npm install --no-audit --no-fund @microsoft/sarif-multitool >/dev/null)
fi
tool=$(realpath "$MULTITOOL_DIR/node_modules/.bin/sarif-multitool")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cp -r fixtures/superwhisper-v6 "$work/mission"
mkdir -p "$work/accents/dir with space/café" "$work/accents/.git"
printf 'import torch\nx = torch.device("cuda:1")\n' > "$work/accents/dir with space/café/naïve file.py"

status=0
for tree in mission accents; do
    (cd "$work/$tree" && "$GH_BIN" scan --format sarif > "$work/$tree.sarif" || true)
    (cd "$work/$tree" && "$GH_BIN" check --gpu off --no-journal --format sarif > "$work/$tree-check.sarif" || true)
    for sarif in "$work/$tree.sarif" "$work/$tree-check.sarif"; do
        "$tool" validate "$sarif" --output "$sarif.log" --log ForceOverwrite >/dev/null
        # The validator exits 0 whatever it finds: its findings are in its own SARIF log.
        if ! python3 - "$sarif.log" "$(basename "$sarif")" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["runs"][0].get("results", [])
bad = [r for r in results if r.get("level", "warning") in ("error", "warning")]
for r in bad:
    print(f'{sys.argv[2]}: {r.get("level", "warning")} {r["ruleId"]}: {r["message"]}')
print(f'{sys.argv[2]}: {len(bad)} errors or warnings from sarif-multitool validate')
sys.exit(1 if bad else 0)
PY
        then status=1; fi
    done
done
exit $status
