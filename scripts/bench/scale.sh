#!/usr/bin/env bash
# What issue 38 measures, on the six-repository corpus (setup-six.sh) or any corpus whose
# repositories are the directories of $BENCH_DIR/tree:
#   - per repository, each its own root: cold `scan` against parsing every file
#     (`parse_floor --all`) and against `ruff check --no-cache`;
#   - the whole corpus the same way;
#   - ten copies of the corpus against one, in time and peak RSS, in the three states a CI job
#     sees: no cache, the first run (which writes the cache), warm;
#   - every cached output compared byte for byte with the uncached one.
# Prints a Markdown table. Env: BENCH_DIR (default target/bench-six), BENCH_RUNS (default 5),
# GH_BIN, FLOOR_BIN (cargo build --release --example parse_floor).
set -euo pipefail
cd "$(dirname "$0")/../.."
BENCH_DIR=${BENCH_DIR:-target/bench-six}
BENCH_RUNS=${BENCH_RUNS:-5}
GH_BIN=$(realpath "${GH_BIN:-target/release/gpu-homogenize}")
FLOOR_BIN=$(realpath "${FLOOR_BIN:-target/release/examples/parse_floor}")
[[ $BENCH_DIR != target/bench-six ]] || scripts/bench/setup-six.sh >/dev/null
tree=$(realpath "$BENCH_DIR/tree")
ten=$(realpath -m "$BENCH_DIR/ten")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Each repository is its own root (a config at its top), as a checkout is; so are the corpus and
# the ten copies.
for d in "$tree"/*/ "$tree"; do [[ -e $d/gpu-homogenize.toml ]] || : >"$d/gpu-homogenize.toml"; done
if [[ ! -e $ten/stamp ]]; then
  rm -rf "$ten" && mkdir -p "$ten"
  for i in 0 1 2 3 4 5 6 7 8 9; do
    cp -a "$tree" "$ten/copy$i"
    find "$ten/copy$i" -name gpu-homogenize.toml -delete
    rm -rf "$ten/copy$i/.gpu-homogenize"
  done
  : >"$ten/gpu-homogenize.toml"
  touch "$ten/stamp"
fi

median() { # <cmd...>: the median wall time of BENCH_RUNS runs, in seconds
  hyperfine -N -i -w 1 -r "$BENCH_RUNS" --export-json "$tmp/h.json" "$(printf '%q ' "$@")" >/dev/null 2>&1
  python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["results"][0]["median"])' "$tmp/h.json"
}
peak() { # <out> <cmd...>: peak RSS in MiB and wall seconds of one run; stdout to <out>
  local out=$1
  shift
  /usr/bin/time -f '%M %e' -o "$tmp/t" "$@" >"$out" 2>/dev/null || true
  tail -n1 "$tmp/t" | awk '{ printf "%.0f %.2f", $1 / 1024, $2 }'
}
ratio() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$1" "$2"; }

echo "| repository | files | cold scan | parse every file | ratio | ruff --no-cache | scan / ruff |"
echo "|---|---|---|---|---|---|---|"
for d in "$tree"/*/ "$tree"; do
  name=$(basename "$d")
  [[ $d == "$tree" ]] && name="all six"
  files=$(find "$d" -type f \( -name '*.py' -o -name '*.rs' \) | wc -l)
  scan=$(cd "$d" && median "$GH_BIN" scan --no-cache --format json .)
  floor=$(cd "$d" && median "$FLOOR_BIN" --all .)
  py=$(find "$d" -name '*.py' -print -quit)
  if [[ -n $py ]]; then
    ruff=$(cd "$d" && median ruff check --no-cache --quiet --exit-zero --isolated .)
    vs="$(ratio "$scan" "$ruff")×"
  else
    ruff="—" vs="—"
  fi
  echo "| $name | $files | ${scan} s | ${floor} s | $(ratio "$scan" "$floor")× | ${ruff}${ruff:+ s} | $vs |" | sed 's/— s/—/'
done

echo
echo "| state | one copy: peak RSS, time | ten copies: peak RSS, time | RSS ratio | time ratio |"
echo "|---|---|---|---|---|"
for state in "no cache" "first run" warm; do
  row=()
  for root in "$tree" "$ten"; do
    args=(scan --format json)
    case $state in
      "no cache") args+=(--no-cache) ;;
      "first run") "$GH_BIN" cache clean "$root" >/dev/null ;;
      warm) ;;
    esac
    name=$(basename "$root")-${state// /-}
    row+=("$(peak "$tmp/$name.json" "$GH_BIN" "${args[@]}" "$root")")
  done
  read -r m1 t1 <<<"${row[0]}"
  read -r m10 t10 <<<"${row[1]}"
  echo "| $state | $m1 MiB, $t1 s | $m10 MiB, $t10 s | $(ratio "$m10" "$m1")× | $(ratio "$t10" "$t1")× |"
done
for root in tree ten; do
  for state in first-run warm; do
    cmp -s "$tmp/$root-no-cache.json" "$tmp/$root-$state.json" ||
      { echo "error: $root: the $state output differs from the uncached one" >&2; exit 1; }
  done
done
echo
echo "Outputs with and without the cache: the same bytes (one copy and ten)."
