#!/usr/bin/env bash
# Ecosystem check for Rust: vendor real GPU crates from crates.io (a throwaway manifest under
# target/ecosystem), then `scan` and `fix` a copy of their sources. Passes when no valid file
# fails to parse and no rewrite is refused by its CPU check (a rewrite that does not re-parse).
# Env: GH_BIN (default target/release/gpu-homogenize), CRATES (default below).
set -euo pipefail
cd "$(dirname "$0")/.."
GH_BIN=${GH_BIN:-target/release/gpu-homogenize}
CRATES=${CRATES:-"candle-core@0.9 candle-nn@0.9 candle-examples@0.9 cudarc@0.19 burn-cuda@0.18 tch@0.20"}
dir=target/ecosystem
mkdir -p "$dir/src"
[[ -f $dir/src/lib.rs ]] || : >"$dir/src/lib.rs"
{
  printf '[package]\nname = "ecosystem"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n[workspace]\n\n[dependencies]\n'
  for spec in $CRATES; do printf '%s = "%s"\n' "${spec%@*}" "${spec#*@}"; done
} >"$dir/Cargo.toml"
if [[ ! -d $dir/vendor ]]; then
  (cd "$dir" && cargo vendor --quiet vendor >/dev/null)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for spec in $CRATES; do
  name=${spec%@*}
  for src in "$dir"/vendor/"$name" "$dir"/vendor/"$name"-[0-9]*; do
    [[ -d $src ]] && cp -r "$src" "$work/"
  done
done
files=$(find "$work" -name '*.rs' | wc -l)
echo "crates: $CRATES"
echo "files: $files .rs"
start=$(date +%s.%N)
"$GH_BIN" scan --format json "$work" >"$work/scan.json" || true
end=$(date +%s.%N)
"$GH_BIN" fix --gpu off --no-journal --format json "$work" >"$work/fix.json" || true
python3 - "$work/scan.json" "$work/fix.json" "$start" "$end" <<'PY'
import json, sys
scan, fix = (json.load(open(p)) for p in sys.argv[1:3])
elapsed = float(sys.argv[4]) - float(sys.argv[3])
s = scan["summary"]
print(f"scan: {s['files']} files in {elapsed:.2f} s, by status {s['by_status']}, {s['violations']} violations, {s['review']} for review")
errors = [f for f in scan["files"] if f["status"] == "error"]
for f in errors:
    print(f"  parse error: {f['path']}: {f['error']}")
refused = [f for f in fix["files"] if f["status"] == "error" and "CPU check" in (f.get("error") or "")]
for f in refused:
    print(f"  rewrite refused: {f['path']}: {f['error']}")
print(f"fix: {fix['summary']['by_status']}")
sys.exit(1 if refused else 0)
PY
