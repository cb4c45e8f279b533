#!/usr/bin/env bash
# kill -9 of the tool at a random moment of `fix` on a tree of many files: no file may be torn
# (each is its original or its complete rewrite), the leftovers of the killed run are temp files
# only, and the next run reports and removes them, then finishes the job. Backups (`--backup-dir`)
# are complete or absent under their name, never truncated.
. "$(dirname "$0")/common.sh"
TRIALS=${TRIALS:-30}; FILES=${FILES:-400}
torn=0; leftovers=0; cleaned=0; unfinished=0; backups=0; partial=0
T0=$WORK/reference; mkdir -p "$T0"; git init -q "$T0"
bad_py > "$T0/f.py"
"$BIN" fix --gpu off --no-journal "$T0" >/dev/null 2>&1
fixed=$(cat "$T0/f.py")
original=$(bad_py)
for trial in $(seq 1 "$TRIALS"); do
    T=$WORK/t$trial; mkdir -p "$T"; git init -q "$T"
    for i in $(seq 1 "$FILES"); do bad_py > "$T/f$i.py"; done
    "$BIN" fix --gpu off --no-journal -j 2 --backup-dir "$WORK/bak$trial" "$T" >/dev/null 2>&1 &
    pid=$!
    sleep "0.$((RANDOM % 30))"
    kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
    for i in $(seq 1 "$FILES"); do
        now=$(cat "$T/f$i.py")
        [ "$now" = "$original" ] || [ "$now" = "$fixed" ] || torn=$((torn + 1))
    done
    for b in "$WORK/bak$trial"/f*.py; do
        [ -e "$b" ] || continue
        backups=$((backups + 1))
        [ "$(cat "$b")" = "$original" ] || partial=$((partial + 1))
    done
    n=$(find "$T" -name '.gpu-homogenize-*.tmp' | wc -l)
    leftovers=$((leftovers + n))
    "$BIN" fix --gpu off --no-journal -j 2 "$T" > "$WORK/next$trial" 2>&1
    [ "$(find "$T" -name '.gpu-homogenize-*.tmp' | wc -l)" -eq 0 ] && cleaned=$((cleaned + 1))
    "$BIN" scan "$T" >/dev/null 2>&1 || unfinished=$((unfinished + 1))
done
echo "  $TRIALS kill -9 trials over $FILES files; $leftovers temp files left by the killed runs"
expect '[ $torn -eq 0 ]' "torn files: $torn"
expect '[ $partial -eq 0 ]' "backups under their name not complete: $partial of $backups"
expect '[ $cleaned -eq $TRIALS ]' "the next run removed the leftovers in $cleaned of $TRIALS trials"
expect '[ $unfinished -eq 0 ]' "the next run finished the job: $unfinished trees still non-compliant"
finish
