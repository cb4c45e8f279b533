#!/usr/bin/env bash
# The GPU slot hides the CPU work: with a 50 ms context creation in the simulated driver,
# the wall time of `fix --gpu require` on the 40-file mission is compared with the serialised
# GPU time (number of checks × the time of one check measured alone). Target: <= 1.15x.
# Env: GH_BIN (default target/release/gpu-homogenize), DELAY_MS (default 50), RUNS (default 5).
set -euo pipefail
cd "$(dirname "$0")/../.."
GH_BIN=${GH_BIN:-target/release/gpu-homogenize}
DELAY_MS=${DELAY_MS:-50}
RUNS=${RUNS:-5}
cargo build --release --locked -q -p fakegpu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for lib in libcuda.so libcuda.so.1 libnvidia-ml.so.1; do cp target/release/libfakegpu.so "$work/$lib"; done
export GPU_HOMOGENIZE_DRIVER_DIR=$work FAKEGPU_STATE=$work/state FAKEGPU_PROBE_DELAY_MS=$DELAY_MS
export FAKEGPU_DEVICES="NVIDIA GeForce RTX 5060 Ti,16,12.0,0000:01:00.0,1;NVIDIA GeForce RTX 3090,24,8.6,0000:02:00.0,2"

python3 - "$GH_BIN" "$work" "$RUNS" <<'PY'
import json, shutil, statistics, subprocess, sys, time
gh, work, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
fixture = "fixtures/superwhisper-v6"

def one_check():
    # One compliant file through the slot alone: the time of one check, start to end.
    out = subprocess.run([gh, "check", "--gpu", "require", "--no-journal", "--format", "json",
                          f"{fixture}/tools/compliant_example.py"], capture_output=True, text=True)
    c = json.loads(out.stdout)["files"][0]["gpu_check"]
    assert c["status"] == "passed", c
    return c["finished_ms"] - c["started_ms"]

def mission():
    tree = f"{work}/tree"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(fixture, tree)
    start = time.perf_counter()
    out = subprocess.run([gh, "fix", "--gpu", "require", "--no-journal", "--format", "json", tree],
                         capture_output=True, text=True)
    wall = (time.perf_counter() - start) * 1000
    doc = json.loads(out.stdout)
    checks = doc["summary"]["gpu"]["checks"]
    assert doc["summary"]["gpu"]["passed"] == checks, doc["summary"]
    return wall, checks

single = statistics.median(one_check() for _ in range(runs))
results = [mission() for _ in range(runs)]
wall = statistics.median(w for w, _ in results)
checks = results[0][1]
serial = checks * single
print(f"one check alone: {single:.0f} ms (median of {runs}); checks in the mission run: {checks}")
print(f"serialised GPU time: {serial:.0f} ms; wall time of fix --gpu require: {wall:.0f} ms (median of {runs})")
ratio = wall / serial
print(f"ratio wall / serialised GPU time: {ratio:.3f} (target <= 1.15): {'PASS' if ratio <= 1.15 else 'FAIL'}")
PY
