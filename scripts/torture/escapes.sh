#!/usr/bin/env bash
# Symlink escapes: no path, link, `..`, race or journal link makes a write land outside.
. "$(dirname "$0")/common.sh"
OUT=$WORK/outside; ROOT=$WORK/root
mkdir -p "$OUT" "$ROOT/sub" && git init -q "$ROOT"
bad_py > "$OUT/x.py"; cp "$OUT/x.py" "$OUT/orig.py"
ln -s "$OUT" "$ROOT/link"
same() { cmp -s "$OUT/x.py" "$OUT/orig.py"; }

"$BIN" fix --gpu off --no-journal "$ROOT" "$ROOT/link/" >/dev/null 2>&1
expect same "fix ROOT ROOT/link/ leaves the link's target alone"
"$BIN" fix --gpu off --no-journal "$ROOT/link/../outside/x.py" >/dev/null 2>&1
expect same "fix ROOT/link/../outside/x.py (kernel resolves outside) refused"
"$BIN" fix --gpu off --no-journal "$ROOT/link/x.py" >/dev/null 2>&1
expect same "fix ROOT/link/x.py refused"

# The journal directory, then the journal file, as links.
mkdir -p "$OUT/jdir"; ln -s "$OUT/jdir" "$ROOT/.gpu-homogenize"
bad_py > "$ROOT/a.py"
"$BIN" fix --dry-run --gpu off "$ROOT" >/dev/null 2>&1
expect '[ ! -e "$OUT/jdir/journal.jsonl" ]' "journal dir as a symlink: nothing written through it"
rm "$ROOT/.gpu-homogenize"; mkdir "$ROOT/.gpu-homogenize"
echo keep > "$OUT/victim"; ln -s "$OUT/victim" "$ROOT/.gpu-homogenize/journal.jsonl"
"$BIN" fix --gpu off "$ROOT" >/dev/null 2>&1
expect '[ "$(cat "$OUT/victim")" = keep ]' "journal file as a symlink: target untouched"

# Unrelated trees: never root `/`.
mkdir -p "$WORK/t1" "$WORK/t2"; bad_py > "$WORK/t1/a.py"; bad_py > "$WORK/t2/b.py"
msg=$("$BIN" fix --gpu off --no-journal "$WORK/t1/a.py" "$WORK/t2/b.py" 2>&1); rc=$?
expect '[ $rc -eq 2 ] && echo "$msg" | grep -q "common tree root\|different trees"' "files in unrelated trees: clear error, exit 2 (got $rc)"

# A parent directory swapped for a link between read and write: a slow run over many
# files, swapping sub/ for the link meanwhile, many times.
escaped=0
for trial in $(seq 1 20); do
    rm -rf "$ROOT/sub" "$ROOT/sub.real"; mkdir -p "$ROOT/sub"
    for i in $(seq 1 40); do bad_py > "$ROOT/sub/f$i.py"; bad_py > "$OUT/f$i.py"; done
    cp "$OUT/f1.py" "$OUT/pristine"
    "$BIN" fix --gpu off --no-journal -j 1 "$ROOT" >/dev/null 2>&1 &
    pid=$!
    sleep 0.0$((RANDOM % 9 + 1))
    mv "$ROOT/sub" "$ROOT/sub.real" 2>/dev/null && ln -s "$OUT" "$ROOT/sub"
    wait $pid
    for i in $(seq 1 40); do cmp -s "$OUT/f$i.py" "$OUT/pristine" || escaped=$((escaped + 1)); done
    rm -f "$ROOT/sub"
done
expect '[ $escaped -eq 0 ]' "directory swapped for a link mid-run, 20 trials x 40 files: $escaped writes outside"
finish
