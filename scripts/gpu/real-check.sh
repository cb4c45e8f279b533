#!/usr/bin/env bash
# The GPU checks on a real NVIDIA driver (issue 37): per-process accounting and UUID masks.
# Run on a machine with at least one NVIDIA card, from the repository root:
#
#   scripts/gpu/real-check.sh [BINARY] [OUT_DIR]
#
# BINARY defaults to target/release/gpu-homogenize (built if missing and cargo exists);
# OUT_DIR (default: target/real-gpu) receives doctor.txt/json, the JSON of each check and
# summary.md: what NVML showed per process, the card by UUID, the date and the driver.
# On a one-card machine the target is that card and nothing is forbidden; the per-process
# path and the UUID path are still proved, and a UUID no card has must fail the check.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-target/release/gpu-homogenize}
out=${2:-${OUT:-target/real-gpu}}
if [[ ! -x $bin ]]; then
  cargo build --release --locked
fi
bin=$(realpath "$bin")
mkdir -p "$out"
out=$(realpath "$out")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

nvidia-smi --query-gpu=index,name,pci.bus_id,uuid,driver_version --format=csv > "$out/nvidia-smi.csv" || true
"$bin" doctor > "$out/doctor.txt" || true
# doctor exits 1 here: the repository's own policy names the mission's two cards, not this machine's.
"$bin" doctor --format json > "$out/doctor.json" || true
count=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["cards"]))' "$out/doctor.json")
target=$(python3 -c '
import json, sys
cards = json.load(open(sys.argv[1]))["cards"]
print(max(range(len(cards)), key=lambda i: (cards[i]["memory_mib"], -i)))' "$out/doctor.json")
uuid() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cards"][int(sys.argv[2])]["uuid"])' "$out/doctor.json" "$1"; }
name() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cards"][int(sys.argv[2])]["name"])' "$out/doctor.json" "$1"; }
target_uuid=$(uuid "$target")
forbidden=""
for ((i = 0; i < count; i++)); do
  [[ $i == "$target" ]] && continue
  forbidden+="{ uuid = \"$(uuid "$i")\" },"
done

# One tree per policy: the mission's fixture, its policy's cards replaced by this machine's.
tree() { # MASK DIR
  cp -r fixtures/superwhisper-v6 "$2"
  python3 - "$2/gpu-homogenize.toml" "$1" "$target_uuid" "[${forbidden%,}]" <<'PY'
import re, sys
path, mask, target, forbidden = sys.argv[1:]
text = open(path).read()
text = re.sub(r'(?m)^visible_devices\s*=.*$', f'visible_devices = "{mask}"', text)
text = re.sub(r'(?m)^target\s*=.*$', f'target = {{ uuid = "{target}" }}', text)
text = re.sub(r'(?m)^forbidden\s*=.*$', f'forbidden = {forbidden}', text)
open(path, "w").write(text)
PY
}

# 1. The mission under the index mask (PCI order), each file run by a command that starts two
#    workers: per-process accounting on the real driver.
tree "$target" "$work/index"
workers="'$bin' __probe --mib 256 --hold-ms 1500 >/dev/null & '$bin' __probe --mib 128 --hold-ms 1500 >/dev/null; wait"
(cd "$work/index" && "$bin" fix --gpu require --no-journal --format json --gpu-cmd "$workers" > "$out/index-mask.json") || true
# 2. A worker that masks the forbidden card itself must fail its check (two cards or more).
if ((count > 1)); then
  other=$(( target == 0 ? 1 : 0 ))
  bad="CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=$other '$bin' __probe --mib 64 --hold-ms 1500 >/dev/null"
  (cd "$work/index" && "$bin" check --gpu require --no-journal --format json --gpu-cmd "$bad" tools/compliant_example.py > "$out/forbidden-worker.json") || true
fi
# 2b. Workers of a real framework (PyTorch, where python3 has it): a program that starts two
#     processes by multiprocessing's spawn, each allocating on cuda:0 under the policy's mask.
if python3 -c 'import torch' 2>/dev/null; then
  cat > "$work/torch_workers.py" <<'PY'
import multiprocessing as mp
import time

import torch


def work(mib):
    block = torch.empty(mib * 2**20, dtype=torch.uint8, device="cuda:0")
    torch.cuda.synchronize()
    time.sleep(2.0)
    del block


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    workers = [ctx.Process(target=work, args=(mib,)) for mib in (512, 256)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    raise SystemExit(max(w.exitcode for w in workers))
PY
  (cd "$work/index" && "$bin" check --gpu require --no-journal --format json --gpu-cmd "python3 '$work/torch_workers.py'" tools/compliant_example.py > "$out/torch-workers.json") || true
fi
# 2b'. The mission's own programs, as fixed, run by the real PyTorch: those whose every import
#      is installed here (the rest need faster_whisper, TTS, llama_cpp...). Informational: a
#      program may still stop on its own checks (a card name it expects), but every process it
#      starts must be listed on the target.
if python3 -c 'import torch' 2>/dev/null; then
  mapfile -t runnable < <(cd "$work/index" && python3 - <<'PY'
import ast, importlib.util, pathlib, sys
for path in sorted(pathlib.Path(".").rglob("*.py")):
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        continue
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    if "torch" in names and all(n == "__future__" or importlib.util.find_spec(n) for n in names):
        print(path)
PY
)
  (cd "$work/index" && "$bin" check --gpu require --no-journal --format json --gpu-timeout 20 --gpu-cmd "python3 {file}" "${runnable[@]}" > "$out/programs.json") || true
fi
# 2c. Another user's process on the card during a check: shown as foreign, never failing it nor
#     counted as its leak. 2d. A worker still holding memory when the command ends: the leak.
listed() { # PID: until NVML lists it (10 s at most)
  for _ in $(seq 100); do
    nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | grep -qx "$1" && return 0
    sleep 0.1
  done
  return 1
}
if command -v nvidia-smi >/dev/null; then
  CUDA_VISIBLE_DEVICES=$target_uuid "$bin" __probe --mib 512 --hold-ms 30000 >/dev/null &
  stranger=$!
  listed "$stranger" || echo "the foreign process $stranger was never listed" >&2
  (cd "$work/index" && "$bin" check --gpu require --no-journal --format json --gpu-cmd "'$bin' __probe --mib 64 --hold-ms 1000 >/dev/null" tools/compliant_example.py > "$out/foreign.json") || true
  kill "$stranger" 2>/dev/null || true
  wait "$stranger" 2>/dev/null || true
  linger="'$bin' __probe --mib 128 --hold-ms 30000 >/dev/null & w=\$!; for i in \$(seq 100); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -qx \"\$w\" && break; sleep 0.1; done"
  (cd "$work/index" && "$bin" check --gpu require --no-journal --format json --gpu-cmd "$linger" tools/compliant_example.py > "$out/lingering.json") || true
fi
# 3. The policy's mask by the target's UUID, and by a UUID no card has.
tree "$target_uuid" "$work/uuid"
(cd "$work/uuid" && "$bin" fix --gpu require --no-journal --format json > "$out/uuid-mask.json") || true
tree "GPU-00000000-1111-2222-3333-444444444444" "$work/bad-uuid"
# (Named by UUID, the target would be refused when the config loads, before any check: by its
# PCI bus id, the check itself must find that the mask selects no card.)
bus=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cards"][int(sys.argv[2])]["pci_bus_id"])' "$out/doctor.json" "$target")
sed -i "s|^target = .*|target = { pci_bus_id = \"$bus\" }|; s|^forbidden = .*|forbidden = []|" "$work/bad-uuid/gpu-homogenize.toml"
(cd "$work/bad-uuid" && "$bin" fix --gpu require --no-journal --format json > "$out/bad-uuid.json") || true

python3 - "$out" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" <<'PY'
import json, os, sys
out, when = sys.argv[1:]
lines = [f"# Real-GPU checks, {when}", ""]
lines.append("```\n" + open(os.path.join(out, "doctor.txt")).read().rstrip() + "\n```\n")
ok = True
def checks(name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return None
    try:
        doc = json.load(open(path))
    except ValueError:
        return []
    return [f for f in doc["files"] if f.get("gpu_check")]
for name, want in [("index-mask.json", "passed"), ("forbidden-worker.json", "failed"),
                   ("programs.json", None),
                   ("torch-workers.json", "passed"), ("foreign.json", "passed"),
                   ("lingering.json", "leak"),
                   ("uuid-mask.json", "passed"), ("bad-uuid.json", "not passed")]:
    files = checks(name)
    if files is None:
        lines.append(f"- {name}: not run (one card, or no PyTorch)")
        continue
    statuses = sorted({f["gpu_check"].get("status") for f in files})
    good = (statuses == [want]) if want != "not passed" else ("passed" not in statuses and bool(files))
    if name == "programs.json":  # informational: each process on the target, none foreign
        procs = [p for f in files for p in f["gpu_check"].get("processes", [])]
        good = bool(files) and all(not p["forbidden"] for p in procs)
        ok &= good
        lines.append(f"- {name}: {len(files)} programs run by python3, statuses {statuses}, "
                     f"{len(procs)} processes listed, none on a forbidden card: {'OK' if good else 'UNEXPECTED'}")
        for f in files:
            g = f["gpu_check"]
            mine = [p for p in g.get("processes", []) if "python" in (p.get("command") or "")]
            lines.append(f"  - `{f['path']}`: {g.get('status')}, {len(mine)} python process(es) on "
                         f"{', '.join(sorted({p['uuid'] for p in mine})) or '-'}, peak "
                         f"{max([p.get('peak_mib') or 0 for p in mine], default=0)} MiB"
                         f"{': ' + g['message'][:160] if g.get('message') else ''}")
        continue
    if name == "foreign.json":  # the stranger must be listed, as foreign
        good &= any(p["origin"] == "foreign" for f in files for p in f["gpu_check"].get("processes", []))
    ok &= good
    lines.append(f"- {name}: {len(files)} checks, statuses {statuses}, expected {want}: {'OK' if good else 'UNEXPECTED'}")
    for f in files[:3]:
        g = f["gpu_check"]
        lines.append(f"  - `{f['path']}` on {g.get('device_name')} {g.get('uuid')}, host {g.get('host')}: {g.get('message') or ''}")
        for p in g.get("processes", []):
            still = f", still {p['lingering_mib']} MiB when the command ended" if p.get("lingering_mib") is not None else ""
            lines.append(f"    - pid {p['pid']} {p['origin']} on {p['card']} {p['uuid']} peak {p.get('peak_mib')} MiB{still}{' FORBIDDEN' if p['forbidden'] else ''}: {p.get('command') or ''}")
        if g.get("processes_unlisted"):
            lines.append(f"    - processes not attributed: {g['processes_unlisted']}")
open(os.path.join(out, "summary.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
sys.exit(0 if ok else 1)
PY
