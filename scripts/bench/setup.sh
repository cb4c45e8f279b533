#!/usr/bin/env bash
# Installs the peer tools and builds the benchmark corpus: the .py files of a
# few pinned PyPI sdists (real GPU-heavy code, reproducible byte for byte).
# Idempotent: a second run only checks and prints the corpus size.
# Env: BENCH_DIR (default target/bench-corpus); the corpus is $BENCH_DIR/tree.
set -euo pipefail

cd "$(dirname "$0")/../.."
BENCH_DIR=${BENCH_DIR:-target/bench-corpus}

# Versions this benchmark was prepared with. Pinned so that timings taken on
# different days compare the same bytes and the same peer binaries.
RUFF_VERSION=0.17.6
AST_GREP_VERSION=0.51.1
# ~5,550 .py files, ~98 MB. transformers alone is ~2,900 files; the rest add
# training/launcher code, where GPU selection actually lives.
PACKAGES=(
  transformers==5.23.0
  accelerate==1.15.0
  pytorch-lightning==2.6.6
  deepspeed==0.19.8
  peft==0.21.2
  diffusers==0.42.1
)
# BENCH_PACKAGES (space-separated name==version) builds another corpus, e.g. general
# code where GPU words are rare and the prefilter skips most files.
if [[ -n ${BENCH_PACKAGES:-} ]]; then read -r -a PACKAGES <<<"$BENCH_PACKAGES"; fi

SUDO=
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi

# Debian's ripgrep/hyperfine are old but fine; only touch apt when one is missing.
missing=()
command -v rg >/dev/null || missing+=(ripgrep)
command -v hyperfine >/dev/null || missing+=(hyperfine)
if ((${#missing[@]})); then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}"
fi

# Don't replace a peer the developer already has; just say if it differs.
pip_peer() { # <command> <pip package> <pinned version>
  if ! command -v "$1" >/dev/null; then
    pip install -q --disable-pip-version-check "$2==$3"
  fi
  local got
  got=$("$1" --version | awk '{print $2}')
  if [[ $got != "$3" ]]; then
    echo "note: $1 $got installed, benchmark was pinned to $3" >&2
  fi
}
pip_peer ruff ruff "$RUFF_VERSION"
pip_peer ast-grep ast-grep-cli "$AST_GREP_VERSION"

mkdir -p "$BENCH_DIR/sdist" "$BENCH_DIR/tree" "$BENCH_DIR/stamps"
for spec in "${PACKAGES[@]}"; do
  pkg=${spec%%==*} ver=${spec##*==}
  stamp="$BENCH_DIR/stamps/$pkg-$ver"
  [[ -e $stamp ]] && continue

  # One dir per package: sdist file names normalise '-' to '_' inconsistently.
  dl="$BENCH_DIR/sdist/$pkg"
  mkdir -p "$dl"
  sdist=$(find "$dl" -maxdepth 1 -name "*-$ver.tar.gz" | head -n1)
  if [[ -z $sdist ]]; then
    echo "downloading $spec" >&2
    pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
      -d "$dl" "$spec"
    sdist=$(find "$dl" -maxdepth 1 -name "*-$ver.tar.gz" | head -n1)
  fi
  [[ -n $sdist ]] || { echo "error: no .tar.gz sdist for $spec in $dl" >&2; exit 1; }

  # Only .py files, and none under dot-dirs: rg, ast-grep and the ignore crate
  # all skip hidden paths, so keeping them would make the file sets differ.
  out="$BENCH_DIR/tree/$pkg"
  rm -rf "$out" && mkdir -p "$out"
  tar -xzf "$sdist" -C "$out" --strip-components=1 \
    --wildcards --exclude='*/.*' '*.py'
  touch "$stamp"
done

# Drop packages that were removed from the list, so the corpus is exactly it.
for d in "$BENCH_DIR"/tree/*/; do
  name=$(basename "$d")
  printf '%s\n' "${PACKAGES[@]%%==*}" | grep -qxF "$name" || rm -rf "$d"
done

files=$(find "$BENCH_DIR/tree" -type f -name '*.py' | wc -l)
bytes=$(find "$BENCH_DIR/tree" -type f -name '*.py' -printf '%s\n' | awk '{s+=$1} END {print s+0}')
echo "corpus: $BENCH_DIR/tree: $files .py files, $(awk -v b="$bytes" 'BEGIN {printf "%.1f", b/1e6}') MB"
