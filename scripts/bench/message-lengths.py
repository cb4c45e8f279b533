#!/usr/bin/env python3
"""Issue 34's message lengths: the median (and 90th percentile) length of the findings'
messages of `scan --no-cache --format json` over the trees named, all together and by rule.

    scripts/bench/message-lengths.py [--bin target/debug/gpu-homogenize] TREE...
"""

import argparse
import collections
import json
import os
import statistics
import subprocess


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default="target/debug/gpu-homogenize")
    parser.add_argument("trees", nargs="+")
    args = parser.parse_args()
    binary = os.path.abspath(args.bin)
    by_rule = collections.defaultdict(list)
    for tree in args.trees:
        out = subprocess.run(
            [binary, "scan", "--no-cache", "--format", "json", "."],
            cwd=tree,
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        for f in json.loads(out)["files"]:
            for finding in f["findings"]:
                by_rule[finding["rule"]].append(len(finding["message"]))
    lengths = sorted(n for v in by_rule.values() for n in v)
    if not lengths:
        print("no findings")
        return
    print(
        f"all: {len(lengths)} findings, median {statistics.median(lengths)}, "
        f"p90 {lengths[int(len(lengths) * 0.9)]}"
    )
    for rule, v in sorted(by_rule.items(), key=lambda kv: -statistics.median(kv[1])):
        print(f"{rule}: {len(v)} findings, median {statistics.median(v)}, max {max(v)}")


if __name__ == "__main__":
    main()
