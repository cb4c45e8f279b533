#!/usr/bin/env bash
# Builds the mixed Python+Rust benchmark corpus: the .py files of a few pinned PyPI sdists
# (setup.sh) and the .rs files (with their Cargo.toml) of the GPU crates that
# scripts/ecosystem-rust.sh vendors from crates.io (candle, burn, cudarc, tch).
# Idempotent. Env: BENCH_DIR (default target/bench-mixed); the corpus is $BENCH_DIR/tree.
set -euo pipefail
cd "$(dirname "$0")/../.."
BENCH_DIR=${BENCH_DIR:-target/bench-mixed}
BENCH_DIR=$BENCH_DIR/py \
  BENCH_PACKAGES="accelerate==1.15.0 peft==0.21.2 pytorch-lightning==2.6.6 diffusers==0.42.1" \
  scripts/bench/setup.sh >/dev/null
vendor=target/ecosystem/vendor
tree=$BENCH_DIR/tree
if [[ ! -e $BENCH_DIR/stamp ]]; then
  if [[ ! -d $vendor ]]; then
    echo "error: $vendor missing: run scripts/ecosystem-rust.sh once (it vendors the crates)" >&2
    exit 1
  fi
  rm -rf "$tree" && mkdir -p "$tree/python" "$tree/rust"
  cp -r "$BENCH_DIR"/py/tree/* "$tree/python/"
  for src in "$vendor"/{candle-*,burn,burn-*,cudarc,tch}; do
    name=$(basename "$src")
    [[ -d $src && ! $name =~ -[0-9]+\.[0-9]+ ]] || continue
    mkdir -p "$tree/rust/$name"
    (cd "$src" && find . \( -name '*.rs' -o -name Cargo.toml \) -not -path '*/.*' -print0 |
      tar --null -T - -cf -) | tar -xf - -C "$tree/rust/$name"
  done
  touch "$BENCH_DIR/stamp"
fi
py=$(find "$tree/python" -name '*.py' | wc -l)
rs=$(find "$tree/rust" -name '*.rs' | wc -l)
bytes=$(find "$tree" -type f \( -name '*.py' -o -name '*.rs' \) -printf '%s\n' | awk '{s+=$1} END {print s+0}')
echo "corpus: $tree: $py .py + $rs .rs files, $(awk -v b="$bytes" 'BEGIN {printf "%.1f", b/1e6}') MB"
