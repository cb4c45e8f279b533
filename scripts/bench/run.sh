#!/usr/bin/env bash
# Times `gpu-homogenize scan` against its two natural peers on the same corpus,
# in one hyperfine invocation so all three see the same machine state:
#   - rg -l with the tool's prefilter literals (floor: read every file once),
#   - ast-grep scan with equivalent rules (ceiling: parse every file).
# Targets (issue): within 2x of rg, at least 20x faster than ast-grep.
# Env (paths relative to the repo root): GH_BIN (default
# target/release/gpu-homogenize), GH_LITERALS
# (comma-separated prefilter literals), BENCH_DIR (see setup.sh),
# BENCH_RUNS (default 10), BENCH_CORPUS (python, default, or mixed: Python+Rust from
# setup-mixed.sh, with the Rust prefilter literals and ast-grep's Rust rules added; targets
# within 5x of rg and at least 15x faster than ast-grep).
# BENCH_SUBTREE (a directory of the corpus to time alone: `rust` or `python` of the mixed one),
# FLOOR_BIN (default target/release/examples/parse_floor, built by `cargo build --release
# --example parse_floor`): when present, timed too, as the floor under scan (walk, read,
# prefilter and parse, nothing else), and with --all as "parse every file" (no prefilter: what
# the project indexes read).
# The content cache (issue 21): `gpu-homogenize` is `scan --no-cache` (cold); "scan, warm cache" re-scans
# an unchanged tree, "scan, 1% touched" after touch.sh touched 1% of the files; "scan, ten copies"
# runs cold on ten copies of the corpus (BENCH_TEN=0 leaves them out); `ruff check` runs on the
# same tree with its own cache (warm) and without (--no-cache). Peak RSS of the scans is taken in
# untimed passes (GNU time): the median of BENCH_RSS_RUNS of them (default 3).
# Writes target/bench-results.{json,md}.
set -euo pipefail

cd "$(dirname "$0")/../.."
here=scripts/bench
GH_BIN=${GH_BIN:-target/release/gpu-homogenize}
# Keep in sync with gpu_literals() in src/fs/source.rs: GPU_WORDS + the modules of knowledge::python::FRAMEWORKS.
GH_LITERALS=${GH_LITERALS:-cuda,CUDA,Cuda,gpu,GPU,nvml,NVML,device,Device,DEVICE,torch,tensorflow,jax,cupy,numba,pycuda,transformers,whisper,TTS,llama_cpp,onnxruntime,accelerate,ctranslate2,diffusers,vllm,tensorrt,candle,burn::,burn_,ort::,tch::}
# Keep in sync with RUST_LITERALS in src/fs/source.rs.
RUST_LITERALS='new_cuda,cuda_if_available,Cuda(,CudaContext::new,CudaDevice::new,CudaDevice {,with_device_id,get_device(,cudaSetDevice,set_var,remove_var,.env(,.envs(,env_remove,env_clear,device_by_index,fn main'
BENCH_CORPUS=${BENCH_CORPUS:-python}
BENCH_RUNS=${BENCH_RUNS:-10}
sgconfig=$here/sgconfig.yml
setup=$here/setup.sh
if [[ $BENCH_CORPUS == mixed ]]; then
  BENCH_DIR=${BENCH_DIR:-target/bench-mixed}
  GH_LITERALS="$GH_LITERALS,$RUST_LITERALS"
  sgconfig=$here/sgconfig-mixed.yml
  setup=$here/setup-mixed.sh
  export BENCH_TARGET_RG=${BENCH_TARGET_RG:-5} BENCH_TARGET_SG=${BENCH_TARGET_SG:-15}
fi
BENCH_DIR=${BENCH_DIR:-target/bench-corpus}
export BENCH_DIR
corpus=$BENCH_DIR/tree${BENCH_SUBTREE:+/$BENCH_SUBTREE}

if ! command -v "$GH_BIN" >/dev/null; then
  echo "error: gpu-homogenize binary '$GH_BIN' not found or not executable." >&2
  echo "       Build it (cargo build --release) or point GH_BIN at it." >&2
  exit 1
fi

"$setup"
# The corpus is its own tree root (a config at its top), as a checked-out project is: its project
# index covers it, and its cache lives in it.
[[ -e $BENCH_DIR/tree/gpu-homogenize.toml ]] || : >"$BENCH_DIR/tree/gpu-homogenize.toml"
BENCH_TEN=${BENCH_TEN:-1}
ten=$BENCH_DIR/ten
if [[ $BENCH_TEN == 1 && ! -e $ten/stamp ]]; then
  rm -rf "$ten" && mkdir -p "$ten"
  for i in 0 1 2 3 4 5 6 7 8 9; do cp -a "$corpus" "$ten/copy$i"; done
  : >"$ten/gpu-homogenize.toml"
  touch "$ten/stamp"
fi

IFS=, read -r -a literals <<<"$GH_LITERALS"
gh=("$GH_BIN" scan --format json --no-cache "$corpus")
warm=("$GH_BIN" scan --format json "$corpus")
gh_ten=("$GH_BIN" scan --format json --no-cache "$ten")
rg=(rg -l -F)
for lit in "${literals[@]}"; do rg+=(-e "$lit"); done
rg+=("$corpus")
sg=(ast-grep scan -c "$sgconfig" "$corpus")
FLOOR_BIN=${FLOOR_BIN:-target/release/examples/parse_floor}
floor=()
if [[ -x $FLOOR_BIN ]]; then
  floor=(-n "parse only" "$(printf '%q ' "$FLOOR_BIN" "$corpus")"
    -n "parse every file" "$(printf '%q ' "$FLOOR_BIN" --all "$corpus")")
fi

# One untimed pass per tool: counts what each reports, and catches crashes
# that hyperfine's -i (needed: the tool exits 1 on findings) would hide.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run_once() { # <out file> <cmd...>; exit 0 = nothing found, 1 = found something
  local out=$1 rc=0
  shift
  "$@" >"$out" || rc=$?
  if ((rc > 1)); then echo "error: exit $rc from: $*" >&2; exit 1; fi
}
run_once "$tmp/gh.out" "${gh[@]}"
"$GH_BIN" cache clean "$corpus" >/dev/null
run_once "$tmp/warm.out" "${warm[@]}" # fills the cache
run_once "$tmp/warm.out" "${warm[@]}"
cmp -s "$tmp/gh.out" "$tmp/warm.out" || { echo "error: the cache changed the output" >&2; exit 1; }
# Peak RSS moves by ±20 MiB between runs of one build (allocator and thread timing): the median
# of BENCH_RSS_RUNS untimed runs (default 3).
BENCH_RSS_RUNS=${BENCH_RSS_RUNS:-3}
rss() { # <name> <cmd...>: median peak RSS (KiB) of the untimed runs, as a JSON line
  local kib runs=()
  for _ in $(seq "$BENCH_RSS_RUNS"); do
    /usr/bin/time -f '%M' -o "$tmp/rss.tmp" "${@:2}" >/dev/null 2>&1 || true
    runs+=("$(tail -n1 "$tmp/rss.tmp")")
  done
  kib=$(printf '%s\n' "${runs[@]}" | sort -n | awk '{ k[NR] = $1 } END { print k[int((NR + 1) / 2)] }')
  printf '{"name": "%s", "kib": %s, "runs": [%s]}\n' "$1" "$kib" "$(IFS=,; echo "${runs[*]}")" >>"$tmp/rss.jsonl"
}
rss gpu-homogenize "${gh[@]}"
rss "scan, warm cache" "${warm[@]}"
ruff=(ruff check --exit-zero --quiet --cache-dir "$tmp/ruff-cache" "$corpus")
ruff_cold=(ruff check --exit-zero --quiet --no-cache "$corpus")
ten_rows=()
if [[ $BENCH_TEN == 1 ]]; then
  rss "scan, ten copies" "${gh_ten[@]}"
  ten_rows=(-n "scan, ten copies" "$(printf '%q ' "${gh_ten[@]}")")
fi
run_once "$tmp/rg.out" "${rg[@]}"
run_once "$tmp/sg.out" "${sg[@]}" --json=stream

# hyperfine -N splits command strings itself, so quote each word for it.
# No shell (-N) keeps its startup out of the timings; --output=pipe because rg
# takes shortcuts when stdout is /dev/null (hyperfine's default).
q() { printf '%q ' "$@"; }
# One --prepare per command: only the "1% touched" row touches files before each run.
prepares=()
for _ in 1 2; do prepares+=(--prepare true); done
prepares+=(--prepare "$(q "$here/touch.sh" "$corpus")")
for _ in 1 2 3 4; do prepares+=(--prepare true); done
((${#floor[@]})) && prepares+=(--prepare true --prepare true)
((${#ten_rows[@]})) && prepares+=(--prepare true)
hyperfine -N -i --warmup 2 --runs "$BENCH_RUNS" --output=pipe \
  --export-json target/bench-results.json \
  "${prepares[@]}" \
  -n gpu-homogenize "$(q "${gh[@]}")" \
  -n "scan, warm cache" "$(q "${warm[@]}")" \
  -n "scan, 1% touched" "$(q "${warm[@]}")" \
  -n rg "$(q "${rg[@]}")" \
  -n ast-grep "$(q "${sg[@]}")" \
  -n "ruff check" "$(q "${ruff[@]}")" \
  -n "ruff check --no-cache" "$(q "${ruff_cold[@]}")" \
  "${floor[@]}" \
  "${ten_rows[@]}"

python3 "$here/report.py" target/bench-results.json "$tmp" "$corpus" \
  | tee target/bench-results.md
