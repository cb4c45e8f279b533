#!/usr/bin/env bash
# Two commands timed turn about (A, B, A, B, ...), N times each, so that both see the same
# machine state: on a shared machine a whole-run benchmark moves by 10% between runs, more than
# most changes it is meant to measure. Prints the median and the minimum of each, in seconds.
# Usage: scripts/bench/ab.sh N CMD-A... -- CMD-B...
# e.g.   scripts/bench/ab.sh 12 ./old scan --no-cache tree -- ./new scan --no-cache tree
set -euo pipefail
n=$1
shift
a=()
while [[ $# -gt 0 && $1 != -- ]]; do a+=("$1"); shift; done
[[ $# -gt 0 ]] || { echo "usage: $0 N CMD-A... -- CMD-B..." >&2; exit 2; }
shift
b=("$@")
time_of() {
  local start end
  start=$(date +%s%N)
  "$@" >/dev/null 2>&1 || true
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}
ta=() tb=()
for _ in $(seq "$n"); do
  ta+=("$(time_of "${a[@]}")")
  tb+=("$(time_of "${b[@]}")")
done
report() {
  printf '%s\n' "${@:2}" | sort -n | awk -v name="$1" '{ t[NR] = $1 }
    END { printf "%s: median %.3f s, min %.3f s (%d runs)\n", name, t[int((NR + 1) / 2)] / 1000, t[1] / 1000, NR }'
}
report A "${ta[@]}"
report B "${tb[@]}"
