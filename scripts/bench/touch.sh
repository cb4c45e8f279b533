#!/usr/bin/env bash
# Touches (mtime now, bytes unchanged) every 100th .py/.rs file of DIR in path order: the
# "1% of the files changed" case of the content cache (scripts/bench/run.sh).
# Usage: touch.sh DIR
set -euo pipefail
find "$1" -type f \( -name '*.py' -o -name '*.rs' \) -not -path '*/.*' | sort | awk 'NR % 100 == 1' |
  xargs -d '\n' touch
