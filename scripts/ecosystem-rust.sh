#!/usr/bin/env bash
# Ecosystem check for Rust: vendor real GPU crates from crates.io (a throwaway manifest under
# target/ecosystem), then `scan` and `fix` a copy of their sources, per family (candle, burn,
# cudarc, tch). Passes when
#   - no valid file fails to parse and no rewrite is refused by its CPU check;
#   - no library module that merely uses GPU types is rewritten: every rewritten file selects a
#     card (GH503/506/507/511 fixed) or is a binary's entry point (src/main.rs, src/bin,
#     examples, benches, [[bin]]/[[example]] paths);
#   - rustfmt, with the crate's own edition, parses every rewritten file.
# It also reports how many .rs files pass the Rust prefilter (and so reach syn).
# Env: GH_BIN (default target/release/gpu-homogenize).
set -euo pipefail
cd "$(dirname "$0")/.."
GH_BIN=${GH_BIN:-target/release/gpu-homogenize}
dir=target/ecosystem
mkdir -p "$dir/src"
[[ -f $dir/src/lib.rs ]] || : >"$dir/src/lib.rs"
cat >"$dir/Cargo.toml" <<'TOML'
[package]
name = "ecosystem"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
candle-core = "0.9"
candle-nn = "0.9"
candle-examples = "0.9"
cudarc = "0.19"
burn-cuda = "0.18"
tch = "0.20"
# burn's default features pull burn-tch, whose torch-sys conflicts with tch 0.20's.
burn = { version = "0.18", default-features = false, features = ["std", "cuda", "autodiff"] }
TOML
if [[ ! -d $dir/vendor ]]; then
  (cd "$dir" && cargo vendor --quiet vendor >/dev/null)
fi
work=$(mktemp -d)
trap 'rm -rf "$work" "$work.scan.json" "$work.fix.json"' EXIT
# One version per crate (the unsuffixed directory): older duplicates are left out.
for src in "$dir"/vendor/{candle-*,burn,burn-*,cudarc,tch}; do
  [[ -d $src && ! $(basename "$src") =~ -[0-9]+\.[0-9]+ ]] && cp -r "$src" "$work/"
done
files=$(find "$work" -name '*.rs' | wc -l)
literals=(new_cuda cuda_if_available 'Cuda(' CudaContext::new CudaDevice::new 'CudaDevice {' with_device_id 'get_device(' set_var remove_var '.env(' '.envs(' env_remove env_clear device_by_index 'fn main')
rg_args=()
for l in "${literals[@]}"; do rg_args+=(-e "$l"); done
passed=$(rg -l -F -g '*.rs' "${rg_args[@]}" "$work" | wc -l)
echo "crates: $(ls "$work" | tr '\n' ' ')"
echo "files: $files .rs, $passed pass the Rust prefilter (parsed by syn)"
start=$(date +%s.%N)
"$GH_BIN" scan --format json "$work" >"$work/../scan-$$.json" || true
end=$(date +%s.%N)
mv "$work/../scan-$$.json" "$work.scan.json"
"$GH_BIN" fix --gpu off --no-journal --format json "$work" >"$work.fix.json" || true
python3 - "$work" "$start" "$end" <<'PY'
import json, subprocess, sys, tomllib
from collections import Counter, defaultdict
from pathlib import Path

work = Path(sys.argv[1])
scan = json.load(open(f"{work}.scan.json"))
fix = json.load(open(f"{work}.fix.json"))
elapsed = float(sys.argv[3]) - float(sys.argv[2])
s = scan["summary"]
print(f"scan: {s['files']} files in {elapsed:.2f} s, by status {s['by_status']}, {s['violations']} violations, {s['review']} for review")

def family(crate):
    for f in ("candle", "burn", "cudarc", "tch"):
        if crate.startswith(f):
            return f
    return crate

def is_entry(crate_dir, rel):
    parts = rel.parts
    manifest = tomllib.loads((crate_dir / "Cargo.toml").read_text())
    declared = {t.get("path") for k in ("bin", "example") for t in manifest.get(k, [])}
    if str(rel) in declared or str(rel) == "src/main.rs":
        return True
    if parts[:2] == ("src", "bin") or parts[0] in ("examples", "benches"):
        return True
    return False

def edition(crate_dir):
    manifest = tomllib.loads((crate_dir / "Cargo.toml").read_text())
    return str(manifest.get("package", {}).get("edition", "2015"))

failures = 0
for f in scan["files"]:
    if f["status"] == "error":
        failures += 1
        print(f"  parse error: {f['path']}: {f['error']}")
per = defaultdict(Counter)
for f in fix["files"]:
    if not f["path"].endswith(".rs"):
        continue
    crate = Path(f["path"]).parts[0]
    fam = family(crate)
    per[fam]["files"] += 1
    if f["status"] == "error" and "CPU check" in (f.get("error") or ""):
        failures += 1
        print(f"  rewrite refused: {f['path']}: {f['error']}")
    fixed_rules = {x["rule"] for x in f["findings"] if x.get("fixed")}
    if not fixed_rules:
        continue
    per[fam]["rewritten"] += 1
    crate_dir = work / crate
    rel = Path(*Path(f["path"]).parts[1:])
    selects = fixed_rules & {"GH503", "GH506", "GH507", "GH511"}
    if is_entry(crate_dir, rel):
        per[fam]["entry points"] += 1
    elif selects:
        per[fam]["select a card"] += 1
    else:
        failures += 1
        per[fam]["library modules"] += 1
        print(f"  library module rewritten: {f['path']}: {sorted(fixed_rules)}")
    text = (work / f["path"]).read_bytes()
    fmt = subprocess.run(["rustfmt", "--edition", edition(crate_dir), "--emit", "stdout"],
                         input=text, capture_output=True)
    if fmt.returncode != 0:
        failures += 1
        per[fam]["rustfmt fails"] += 1
        print(f"  rustfmt rejects: {f['path']}: {fmt.stderr.decode()[:300]}")
for fam, c in sorted(per.items()):
    print(f"{fam}: {c['files']} .rs files, {c['rewritten']} rewritten "
          f"({c['entry points']} entry points, {c['select a card']} select a card, "
          f"{c['library modules']} library modules), {c['rustfmt fails']} rustfmt failures")
print(f"fix: {fix['summary']['by_status']}")
sys.exit(1 if failures else 0)
PY
