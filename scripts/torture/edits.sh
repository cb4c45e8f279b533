#!/usr/bin/env bash
# An editor appending during a run, and two concurrent runs: no edit may be lost.
# Every appended marker line must still be in its file when the run ends, or in a version the
# run kept aside (FILE.edit-kept-by-gpu-homogenize-PID-N).
. "$(dirname "$0")/common.sh"
TRIALS=${TRIALS:-15}; FILES=${FILES:-200}
lost=0; changed=0; appended=0
for trial in $(seq 1 "$TRIALS"); do
    T=$WORK/t$trial; mkdir -p "$T"; git init -q "$T"
    for i in $(seq 1 "$FILES"); do bad_py > "$T/f$i.py"; done
    "$BIN" fix --gpu off --no-journal -j 2 "$T" > "$WORK/out$trial" 2>&1 &
    pid=$!
    n=0
    while kill -0 $pid 2>/dev/null; do
        i=$((RANDOM % FILES + 1)); n=$((n + 1))
        echo "# edit $trial-$n" >> "$T/f$i.py"; echo "$i $n" >> "$WORK/edits$trial"
    done
    wait $pid
    appended=$((appended + n))
    while read -r i n; do
        grep -qx "# edit $trial-$n" "$T/f$i.py" "$T/f$i.py".edit-kept-by-gpu-homogenize-* 2>/dev/null ||
            lost=$((lost + 1))
    done < "$WORK/edits$trial"
    changed=$((changed + $(grep -c "changed on disk\|written by another program\|open for writing" "$WORK/out$trial")))
done
echo "  $appended edits appended during $TRIALS runs of $FILES files; $changed files refused as changed or kept aside"
expect '[ $lost -eq 0 ]' "edits lost: $lost"

# Two runs at once over one tree: each file rewritten once, none lost or doubled.
T=$WORK/concurrent; mkdir -p "$T"; git init -q "$T"
for i in $(seq 1 "$FILES"); do bad_py > "$T/f$i.py"; done
"$BIN" fix --gpu off -j 2 "$T" >/dev/null 2>&1 & a=$!
"$BIN" fix --gpu off -j 2 "$T" >/dev/null 2>&1 & b=$!
wait $a; wait $b
"$BIN" scan "$T" >/dev/null 2>&1; rc=$?
headers=$(grep -cE "CUDA_DEVICE_ORDER['\"]\] = " "$T"/*.py | grep -vc ':1$')
expect '[ $rc -eq 0 ] && [ $headers -eq 0 ]' "two concurrent runs: all compliant (scan rc=$rc), $headers files with a doubled header"
leftover=$(find "$WORK" -name '.gpu-homogenize-*.tmp' | wc -l)
expect '[ $leftover -eq 0 ]' "no temp files left: $leftover"
finish
