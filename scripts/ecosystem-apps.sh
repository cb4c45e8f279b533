#!/usr/bin/env bash
# Ecosystem check on real voice/speech/vision applications that pick their GPU by hand
# (RealtimeSTT, RealtimeTTS, whisperx, Coqui TTS, ultralytics): `fix` over a copy of their sdists.
#
# 1. downloads the sdists (cached under $APPS_DIR/sdists, idempotent) and unpacks them into
#    $APPS_DIR/tree (one directory per app);
# 2. counts ruff E402 per file before (ruff is pip-installed when missing);
# 3. runs `fix --gpu off --no-journal --format json` on a copy and saves the JSON;
# 4. checks: no errors, every rewritten file compiles, the E402 total does not rise, at most one
#    module-level CUDA_VISIBLE_DEVICES write / header / banner print / validation call per file,
#    the set of changed files is the set the JSON says was rewritten, a second `fix` changes nothing;
# 5. saves one unified diff per rewritten file under $APPS_DIR/diffs (and the rewritten tree under
#    $APPS_DIR/fixed, for review).
# Exits non-zero when a check fails.
#
# Env: GH_BIN (default target/release/gpu-homogenize), APPS_DIR (default target/ecosystem-apps),
#      APPS (pinned specs), ALTERNATES (apps of the same kind tried when a pinned sdist is missing).
#
# `--no-binary NAME` rather than `--no-binary :all:`: both give the sdist of NAME (the download is
# checked to be an sdist), but `:all:` also forces the *build* dependencies pip installs to prepare
# the metadata (numpy, Cython for TTS) to be compiled from source, which takes many minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
GH_BIN=${GH_BIN:-target/release/gpu-homogenize}
APPS_DIR=${APPS_DIR:-target/ecosystem-apps}
APPS=${APPS:-"RealtimeSTT==1.1.2 RealtimeTTS==0.8.10 whisperx==3.8.6 TTS==0.22.0 ultralytics==8.4.190"}
ALTERNATES=${ALTERNATES:-"faster-whisper openai-whisper stable-ts WhisperSpeech"}
GH_BIN=$(realpath "$GH_BIN")
mkdir -p "$APPS_DIR/sdists" "$APPS_DIR/tree"
APPS_DIR=$(realpath "$APPS_DIR")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- 1. download + unpack ---------------------------------------------------------------------
# fetch SPEC: prints the sdist's path; the marker $APPS_DIR/sdists/.SPEC names the cached file.
fetch() {
    local spec=$1 name=${1%%==*} marker="$APPS_DIR/sdists/.$1" dl file
    if [[ -f $marker && -f $APPS_DIR/sdists/$(cat "$marker") ]]; then
        echo "$APPS_DIR/sdists/$(cat "$marker")"
        return 0
    fi
    dl=$(mktemp -d "$work/dl.XXXX")
    if ! python3 -m pip download --quiet --no-binary "$name" --no-deps -d "$dl" "$spec" >&2; then
        return 1
    fi
    file=$(cd "$dl" && ls)
    case $file in
        *.tar.gz | *.zip | *.tar.bz2 | *.tgz) ;;
        *) echo "  $spec: $file is not an sdist" >&2; return 1 ;;
    esac
    mv "$dl/$file" "$APPS_DIR/sdists/$file"
    echo "$file" >"$marker"
    echo "$APPS_DIR/sdists/$file"
}

sdists=()
used=()
missing=0
for spec in $APPS; do
    if path=$(fetch "$spec"); then
        sdists+=("$path"); used+=("$spec")
    else
        echo "sdist of $spec not available" >&2
        missing=$((missing + 1))
    fi
done
for alt in $ALTERNATES; do
    ((missing > 0)) || break
    if path=$(fetch "$alt"); then
        sdists+=("$path"); used+=("$alt (alternate)"); missing=$((missing - 1))
    fi
done
((${#sdists[@]} > 0)) || { echo "no sdist could be downloaded" >&2; exit 2; }

mkdir -p "$work/orig"
for sd in "${sdists[@]}"; do
    stem=$(basename "$sd"); stem=${stem%.tar.gz}; stem=${stem%.tgz}; stem=${stem%.tar.bz2}; stem=${stem%.zip}
    if [[ ! -d $APPS_DIR/tree/$stem ]]; then
        rm -rf "$APPS_DIR/tree/.unpack"
        python3 -c 'import shutil, sys; shutil.unpack_archive(sys.argv[1], sys.argv[2])' "$sd" "$APPS_DIR/tree/.unpack"
        # an sdist holds one top directory; keep its content under the stem
        top=$(cd "$APPS_DIR/tree/.unpack" && ls)
        if [[ $(echo "$top" | wc -l) == 1 && -d $APPS_DIR/tree/.unpack/$top ]]; then
            mv "$APPS_DIR/tree/.unpack/$top" "$APPS_DIR/tree/$stem"; rmdir "$APPS_DIR/tree/.unpack"
        else
            mv "$APPS_DIR/tree/.unpack" "$APPS_DIR/tree/$stem"
        fi
    fi
    # the checks run outside the repository: its .gitignore (target/) must not hide the tree
    cp -r "$APPS_DIR/tree/$stem" "$work/orig/$stem"
done
echo "apps: ${used[*]}"
echo "sdists: $(for s in "${sdists[@]}"; do basename "$s"; done | tr '\n' ' ')"

# --- 2. ruff -------------------------------------------------------------------------------------
if command -v ruff >/dev/null 2>&1; then
    RUFF=(ruff)
else
    python3 -m ruff --version >/dev/null 2>&1 || python3 -m pip install --quiet ruff
    RUFF=(python3 -m ruff)
fi
ruff_e402() { # DIR OUT: ruff exits 1 when it finds something; the JSON must still parse
    (cd "$work" && "${RUFF[@]}" check --select E402 --output-format json --no-cache --isolated "$1" >"$2" || true)
    python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$2"
}
ruff_e402 orig "$work/ruff-before.json"

# --- 3. fix --------------------------------------------------------------------------------------
cp -r "$work/orig" "$work/fixed"
rc=0
"$GH_BIN" fix --gpu off --no-journal --format json "$work/fixed" >"$work/first.json" || rc=$?
echo "first fix: exit $rc"
cp "$work/first.json" "$APPS_DIR/fix.json"
ruff_e402 fixed "$work/ruff-after.json"
cp "$work/ruff-before.json" "$work/ruff-after.json" "$APPS_DIR/"
cp -r "$work/fixed" "$work/fixed-first"     # the tree as the first fix left it
rc2=0
"$GH_BIN" fix --gpu off --no-journal --format json "$work/fixed" >"$work/second.json" || rc2=$?
echo "second fix: exit $rc2"
cp "$work/second.json" "$APPS_DIR/fix-second.json"

# --- 4 + 5. checks, diffs --------------------------------------------------------------------
rm -rf "$APPS_DIR/diffs" "$APPS_DIR/fixed"
mkdir -p "$APPS_DIR/diffs"
cp -r "$work/fixed-first" "$APPS_DIR/fixed"
python3 - "$work" "$APPS_DIR" <<'PY'
import ast, collections, difflib, hashlib, json, os, re, subprocess, sys

work, apps_dir = sys.argv[1:3]
orig, fixed, fixed1 = (os.path.join(work, d) for d in ("orig", "fixed", "fixed-first"))
first = json.load(open(os.path.join(work, "first.json")))
second = json.load(open(os.path.join(work, "second.json")))
failures = []

def fail(msg):
    failures.append(msg)
    print(f"FAIL: {msg}")

def read(root, rel):
    with open(os.path.join(root, rel), "rb") as f:
        return f.read()

# files rewritten, according to the JSON
def rewritten_of(doc):
    out = []
    for f in doc["files"]:
        if f["status"] == "fixed" or (f["status"] == "non_compliant" and any(x.get("fixed") for x in f["findings"])):
            out.append(f["path"])
    return sorted(out)

rewritten = rewritten_of(first)
by_status = collections.Counter(f["status"] for f in first["files"])
print(f"\nfiles: {len(first['files'])}  by status: {dict(sorted(by_status.items()))}")
print(f"rewritten: {len(rewritten)} ({by_status.get('fixed', 0)} fixed, "
      f"{len(rewritten) - by_status.get('fixed', 0)} non_compliant with fixed findings)")
per_app = collections.Counter(p.split("/", 1)[0] for p in rewritten)
for app, n in sorted(per_app.items()):
    print(f"  {app}: {n} rewritten")
rules = collections.Counter((x["rule"], x["name"], "fixed" if x.get("fixed") else ("review" if not x.get("fixable") else "left"))
                            for f in first["files"] for x in f["findings"])
print("findings:")
for (rule, name, state), n in sorted(rules.items()):
    print(f"  {rule} {name} [{state}]: {n}")

# The tree's files, without the tool's own state (`.gpu-homogenize/`: its cache, which it
# keeps out of git with its own .gitignore).
def tree_files(top):
    for root, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if d != ".gpu-homogenize"]
        yield root, names

# the files that changed on disk must be exactly the ones reported
changed = set()
for root, names in tree_files(orig):
    for name in names:
        rel = os.path.relpath(os.path.join(root, name), orig)
        if read(orig, rel) != read(fixed1, rel):
            changed.add(rel)
for root, names in tree_files(fixed1):
    for name in names:
        rel = os.path.relpath(os.path.join(root, name), fixed1)
        if not os.path.exists(os.path.join(orig, rel)):
            fail(f"new file left in the tree: {rel}")
if changed != set(rewritten):
    fail(f"changed on disk but not reported: {sorted(changed - set(rewritten))[:10]}; "
         f"reported but unchanged: {sorted(set(rewritten) - changed)[:10]}")

# errors, grouped by message (line/column numbers folded)
errs = collections.defaultdict(list)
for f in first["files"]:
    if f["status"] == "error":
        errs[re.sub(r"\d+", "N", f.get("error") or "?")].append(f["path"])
skips = collections.defaultdict(list)
for f in first["files"]:
    if f["status"] == "skipped":
        skips[f.get("reason") or "?"].append(f["path"])
print(f"\nerrors: {first['summary']['errors']} (cpu_failed {first['summary'].get('cpu_failed', 0)})")
for msg, paths in sorted(errs.items()):
    print(f"  {len(paths)} x {msg}: {', '.join(paths[:3])}{' ...' if len(paths) > 3 else ''}")
for msg, paths in sorted(skips.items()):
    print(f"  skipped {len(paths)} x {msg}: {', '.join(paths[:3])}")
if first["summary"]["errors"] or first["summary"].get("cpu_failed", 0):
    fail("the first fix reported errors or failed CPU checks")

# compile
bad = []
for rel in rewritten:
    try:
        compile(read(fixed1, rel), rel, "exec")
    except SyntaxError as e:
        bad.append(f"{rel}: {e}")
print(f"\ncompile: {len(rewritten) - len(bad)}/{len(rewritten)} rewritten files compile")
for b in bad:
    fail(f"does not compile: {b}")

# ruff E402
def e402(path, root):
    counts = collections.Counter()
    for d in json.load(open(path)):
        if d.get("code") == "E402":
            counts[os.path.relpath(d["filename"], root)] += 1
    return counts
before = e402(os.path.join(work, "ruff-before.json"), orig)
after = e402(os.path.join(work, "ruff-after.json"), fixed)
tb, ta = sum(before.values()), sum(after.values())
print(f"\nruff E402: before {tb}, after {ta} ({ta - tb:+d})")
rose = {p: (before[p], after[p]) for p in set(before) | set(after) if after[p] > before[p]}
fell = {p: (before[p], after[p]) for p in set(before) | set(after) if after[p] < before[p]}
for p, (b, a) in sorted(rose.items()):
    print(f"  E402 rose  {b} -> {a}: {p}")
for p, (b, a) in sorted(fell.items()):
    print(f"  E402 fell  {b} -> {a}: {p}")
if ta > tb:
    fail(f"E402 total rose from {tb} to {ta}")

# one header, one banner per file
ENV = "CUDA_VISIBLE_DEVICES"

def is_env_target(node):
    # os.environ["CUDA_VISIBLE_DEVICES"] / environ["..."]
    return (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
            and node.slice.value == ENV)

def writes_env(stmt):
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return any(is_env_target(t) for t in targets)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        c = stmt.value
        name = c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", "")
        if name in ("setdefault", "putenv", "__setitem__") and c.args and isinstance(c.args[0], ast.Constant):
            return c.args[0].value == ENV
        if name == "update":
            return any(isinstance(k, ast.Constant) and k.value == ENV
                       for a in c.args if isinstance(a, ast.Dict) for k in a.keys) or \
                   any(k.arg == ENV for k in c.keywords)
    return False

def module_level(stmts):
    # module-level statements, through if/try/with/for blocks, not into def/class bodies
    for s in stmts:
        yield s
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            sub = getattr(s, field, None)
            if isinstance(sub, list):
                yield from module_level(x for x in sub if isinstance(x, ast.stmt) or isinstance(x, ast.excepthandler))

def banner_info(tree, text):
    banner_prints, validators = 0, set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for n in ast.walk(fn):
                if (isinstance(n, ast.Call) and getattr(n.func, "id", None) == "print" and n.args
                        and isinstance(n.args[0], ast.Constant) and "GPU Configuration" in str(n.args[0].value)):
                    validators.add(fn.name)
    for n in ast.walk(tree):
        if (isinstance(n, ast.Call) and getattr(n.func, "id", None) == "print" and n.args
                and isinstance(n.args[0], ast.Constant) and "GPU Configuration" in str(n.args[0].value)):
            banner_prints += 1
    defs = sum(1 for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in validators)
    calls = sum(1 for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) in validators)
    # The default (neutral) header's first line, or the seed's banner (`builtin:seed`).
    headers = text.count("GPU selection (gpu-homogenize)") + text.count("CONFIGURATION CRITIQUE GPU")
    markers = text.count("CONFIGURATION GPU:")
    return banner_prints, defs, calls, headers, markers

print("\nper rewritten file: cvd = module-level CUDA_VISIBLE_DEVICES writes (orig -> new), "
      "hdr = header blocks, mark = docstring markers, banner = banner prints, val = validation defs/calls")
hist = collections.Counter()
for rel in rewritten:
    text_new = read(fixed1, rel).decode("utf-8", "replace")
    text_old = read(orig, rel).decode("utf-8", "replace")
    try:  # parse the bytes, as compile() does: a BOM or an encoding cookie is honoured
        tree_new = ast.parse(read(fixed1, rel))
    except SyntaxError as e:
        print(f"  (not parsed: {rel}: {e})")
        continue  # already failed above
    try:
        cvd_old = sum(1 for s in module_level(ast.parse(read(orig, rel)).body) if writes_env(s))
    except SyntaxError:
        cvd_old = "?"
    cvd = sum(1 for s in module_level(tree_new.body) if writes_env(s))
    banners, vdefs, vcalls, headers, markers = banner_info(tree_new, text_new)
    hist[(cvd, headers, markers, banners, vdefs, vcalls)] += 1
    print(f"  cvd {cvd_old}->{cvd} hdr {headers} mark {markers} banner {banners} val {vdefs}/{vcalls}  {rel}")
    if cvd > 1 or headers > 1 or markers > 1:
        fail(f"{rel}: more than one header ({cvd} CUDA_VISIBLE_DEVICES writes, {headers} header blocks, {markers} markers)")
    if banners > 1 or vdefs > 1 or vcalls > 1:
        fail(f"{rel}: banner printed more than once ({banners} banner prints, {vdefs} validation defs, {vcalls} calls)")
print("histogram (cvd, hdr, mark, banner, val defs, val calls): files")
for k, n in sorted(hist.items()):
    print(f"  {k}: {n}")

# idempotence
again = rewritten_of(second)
moved = []
for root, names in tree_files(fixed1):
    for name in names:
        rel = os.path.relpath(os.path.join(root, name), fixed1)
        if read(fixed1, rel) != read(fixed, rel):
            moved.append(rel)
print(f"\nsecond fix: {len(again)} rewritten, {len(moved)} files changed on disk, "
      f"by status {dict(sorted(collections.Counter(f['status'] for f in second['files']).items()))}")
if again or moved:
    fail(f"second fix is not a no-op: {sorted(set(again) | set(moved))[:10]}")

# diffs
diff_dir = os.path.join(apps_dir, "diffs")
for rel in rewritten:
    out = subprocess.run(["diff", "-u", "--label", f"a/{rel}", "--label", f"b/{rel}",
                          os.path.join(orig, rel), os.path.join(fixed1, rel)],
                         capture_output=True).stdout
    with open(os.path.join(diff_dir, rel.replace("/", "__") + ".diff"), "wb") as f:
        f.write(out)
print(f"\ndiffs: {len(rewritten)} written under {diff_dir}")

print("\n==== summary ====")
print(f"files {len(first['files'])}, rewritten {len(rewritten)}, errors {first['summary']['errors']}, "
      f"review findings {first['summary'].get('review')}, compile failures {len(bad)}, "
      f"E402 {tb} -> {ta}, second fix rewrote {len(again)}")
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("ecosystem-apps check passed")
PY
