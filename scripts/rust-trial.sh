#!/usr/bin/env bash
# The Rust trial of issue 17: 14 real crates from crates.io (pinned versions; moshi and cake laid
# out as their upstream workspaces, the member dependency made a path dependency), each
# scanned, then fixed with --unsafe-fixes on a copy and fixed again. Prints one line per crate:
# its summary, the files the fix changed, whether the second fix changed anything, rewrites that
# no longer parse, and files rustfmt accepted before and not after.
#
#   GH_BIN=target/release/gpu-homogenize TRIAL_DIR=/tmp/rust-trial scripts/rust-trial.sh
set -euo pipefail
BIN=${GH_BIN:-$(cd "$(dirname "$0")/.." && pwd)/target/release/gpu-homogenize}
DIR=${TRIAL_DIR:-$(mktemp -d)}
CRATES="cudarc@0.19.10 dfdx@0.13.0 diffusers@0.3.1 embed_anything@0.7.1 moshi@0.6.4 moshi-cli@0.6.4
moshi-server@0.6.4 cake-core@0.1.0 cake-cli@0.1.0 whisper-cpp-plus@0.1.5 tract-cli@0.23.9
crane-core@26.9.0 ug-cuda@0.5.0 tokenizers@0.23.2 ollama-rs@0.3.6 rten-cli@0.27.0 shimmy@2.6.5"
mkdir -p "$DIR/src" "$DIR/orig" "$DIR/work"
for c in $CRATES; do
    name=${c%@*}; version=${c#*@}
    [ -d "$DIR/src/$name-$version" ] || curl -sfL -A gpu-homogenize-trial \
        "https://static.crates.io/crates/$name/$name-$version.crate" | tar xz -C "$DIR/src"
done
# A workspace of members, each dependency on a member given its path.
workspace() { # NAME MEMBER:CRATE-VERSION... (the dependency table to point at a member: DEP=MEMBER)
    local ws=$DIR/orig/$1; shift; rm -rf "$ws"; mkdir -p "$ws"; local members=()
    for m in "$@"; do
        local dir=${m%%:*} rest=${m#*:}; local src=${rest%%=*}
        cp -r "$DIR/src/$src" "$ws/$dir"; rm -f "$ws/$dir/Cargo.lock"; members+=("\"$dir\"")
        if [[ $rest == *=* ]]; then
            local dep=${rest#*=}; local table=${dep%%/*} member=${dep#*/}
            python3 - "$ws/$dir/Cargo.toml" "$table" "$member" <<'EOF'
import sys
path, table, member = sys.argv[1:]
lines = open(path).read().split("\n")
at = lines.index(f"[dependencies.{table}]")
lines.insert(at + 1, f'path = "../{member}"')
open(path, "w").write("\n".join(lines))
EOF
        fi
    done
    (IFS=,; printf '[workspace]\nresolver = "2"\nmembers = [%s]\n' "${members[*]}" > "$ws/Cargo.toml")
}
workspace moshi moshi-core:moshi-0.6.4 moshi-cli:moshi-cli-0.6.4=moshi/moshi-core \
    moshi-server:moshi-server-0.6.4=moshi/moshi-core
workspace cake cake-core:cake-core-0.1.0 cake-cli:cake-cli-0.1.0=cake-core/cake-core
for c in $CRATES; do
    name=${c%@*}; version=${c#*@}
    case $name in moshi*|cake*) continue ;; esac
    rm -rf "$DIR/orig/$name"; cp -r "$DIR/src/$name-$version" "$DIR/orig/$name"
done

# `rustfmt --emit stdout` of one file (no children): exit status, and whether it is unchanged.
fmtcheck() {
    python3 - "$1" "$2" <<'EOF'
import filecmp, os, re, subprocess, sys
orig, fixed = sys.argv[1:]
def edition(path, top):
    d = os.path.dirname(path)
    while d.startswith(top):
        c = os.path.join(d, "Cargo.toml")
        if os.path.exists(c):
            m = re.search(r'^edition\s*=\s*"(\d+)"', open(c).read(), re.M)
            if m:
                return m.group(1)
        d = os.path.dirname(d)
    return "2021"
def fmt(path, top):
    src = open(path, "rb").read()
    p = subprocess.run(["rustfmt", "--edition", edition(path, top), "--emit", "stdout"],
                       input=src, capture_output=True)
    return p.returncode == 0, p.stdout == src
broken = dirty = 0
for root, _, files in os.walk(fixed):
    for f in files:
        new = os.path.join(root, f)
        old = os.path.join(orig, os.path.relpath(new, fixed))
        if not f.endswith(".rs") or not os.path.exists(old) or filecmp.cmp(new, old, shallow=False):
            continue
        parses, clean = fmt(new, fixed)
        broken += not parses
        dirty += parses and not clean and fmt(old, orig)[1]
print(f"parse_fail={broken} newly_rustfmt_dirty={dirty}")
EOF
}

for p in $(ls "$DIR/orig"); do
    summary=$("$BIN" scan --no-cache "$DIR/orig/$p" 2>/dev/null | grep -E '^[0-9]+ files?:' || true)
    w=$DIR/work/$p; rm -rf "$w" "$w.once"; cp -r "$DIR/orig/$p" "$w"
    "$BIN" fix --gpu off --no-journal --no-cache --unsafe-fixes "$w" > /dev/null 2>&1 || true
    cp -r "$w" "$w.once"
    "$BIN" fix --gpu off --no-journal --no-cache --unsafe-fixes "$w" > /dev/null 2>&1 || true
    changed=$(diff -rq -x .gpu-homogenize "$DIR/orig/$p" "$w.once" | grep -c differ || true)
    again=$(diff -rq -x .gpu-homogenize "$w.once" "$w" | grep -c differ || true)
    echo "$p | $summary | changed=$changed second_fix_changed=$again $(fmtcheck "$DIR/orig/$p" "$w.once")"
done
