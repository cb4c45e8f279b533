#!/usr/bin/env bash
# Builds the "six repositories" corpus of issue 38 from the registries: the .py files of the
# accelerate, DeepSpeed and pytorch-lightning sdists (PyPI), the .rs files (with their
# Cargo.toml) of the candle and burn crates that scripts/ecosystem-rust.sh vendors from
# crates.io, and the mission's own SuperWhisper_V6 tree (fixtures/superwhisper-v6). One
# directory per repository, so each can be timed alone (BENCH_SUBTREE=candle, …).
# Idempotent. Env: BENCH_DIR (default target/bench-six); the corpus is $BENCH_DIR/tree.
set -euo pipefail
cd "$(dirname "$0")/../.."
BENCH_DIR=${BENCH_DIR:-target/bench-six}
BENCH_DIR=$BENCH_DIR/py \
  BENCH_PACKAGES="accelerate==1.15.0 deepspeed==0.19.8 pytorch-lightning==2.6.6" \
  scripts/bench/setup.sh >/dev/null
vendor=target/ecosystem/vendor
tree=$BENCH_DIR/tree
if [[ ! -e $BENCH_DIR/stamp ]]; then
  if [[ ! -d $vendor ]]; then
    echo "error: $vendor missing: run scripts/ecosystem-rust.sh once (it vendors the crates)" >&2
    exit 1
  fi
  rm -rf "$tree" && mkdir -p "$tree"
  cp -r "$BENCH_DIR"/py/tree/* "$tree/"
  cp -r fixtures/superwhisper-v6 "$tree/superwhisper-v6"
  for family in candle burn; do
    for src in "$vendor/$family" "$vendor/$family"-*; do
      name=$(basename "$src")
      # One version per crate (the unsuffixed directory).
      [[ -d $src && ! $name =~ -[0-9]+\.[0-9]+ ]] || continue
      mkdir -p "$tree/$family/$name"
      (cd "$src" && find . \( -name '*.rs' -o -name Cargo.toml \) -not -path '*/.*' -print0 |
        tar --null -T - -cf -) | tar -xf - -C "$tree/$family/$name"
    done
  done
  touch "$BENCH_DIR/stamp"
fi
for d in "$tree"/*/; do
  n=$(find "$d" -type f \( -name '*.py' -o -name '*.rs' \) | wc -l)
  echo "  $(basename "$d"): $n files"
done
files=$(find "$tree" -type f \( -name '*.py' -o -name '*.rs' \) | wc -l)
bytes=$(find "$tree" -type f \( -name '*.py' -o -name '*.rs' \) -printf '%s\n' | awk '{s+=$1} END {print s+0}')
echo "corpus: $tree: $files .py and .rs files, $(awk -v b="$bytes" 'BEGIN {printf "%.1f", b/1e6}') MB"
