#!/usr/bin/env python3
"""When a command prints its first line on stdout, and when it ends (seconds from its start).

Usage: scripts/bench/first-output.py CMD [ARG...]
e.g.   scripts/bench/first-output.py target/release/gpu-homogenize scan --no-cache TREE

For a streaming run, the first line comes as soon as the first file with findings is done;
for one that collects, at the end.
"""
import subprocess
import sys
import time

if len(sys.argv) < 2:
    sys.exit(__doc__)
start = time.monotonic()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
first = None
lines = 0
for _ in proc.stdout:
    if first is None:
        first = time.monotonic() - start
    lines += 1
proc.wait()
end = time.monotonic() - start
shown = "none" if first is None else f"{first:.2f} s"
print(f"first line: {shown}, end: {end:.2f} s, {lines} lines, exit {proc.returncode}")
