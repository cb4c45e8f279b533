#!/usr/bin/env bash
# Three concurrent `fix` runs over one tree while an editor saves (atomically: temp file + mv)
# and appends, then a fourth `fix` that cleans up after them: no edit may be lost. Every marker
# the editor wrote must be in its file, or in a version `fix` kept aside
# (FILE.edit-kept-by-gpu-homogenize-PID-N, which no later run deletes).
. "$(dirname "$0")/common.sh"
TRIALS=${TRIALS:-5}; FILES=${FILES:-150}
edits=0; lost=0; kept=0; changed=0; temps=0; held=0
for trial in $(seq 1 "$TRIALS"); do
    T=$WORK/t$trial; mkdir -p "$T"; git init -q "$T"
    for i in $(seq 1 "$FILES"); do bad_py > "$T/f$i.py"; done
    : > "$WORK/edits$trial"
    pids=()
    for r in 1 2 3; do
        "$BIN" fix --gpu off --no-journal -j 1 "$T" > "$WORK/out$trial.$r" 2>&1 &
        pids+=($!)
    done
    n=0
    while kill -0 "${pids[@]}" 2>/dev/null || [ $n -eq 0 ]; do
        i=$((RANDOM % FILES + 1)); n=$((n + 1))
        if [ $((n % 2)) -eq 0 ]; then
            # An editor's save: the file as it is now, plus a line, renamed over it.
            { cat "$T/f$i.py"; echo "# edit $trial-$n"; } > "$T/.f$i.swp" && mv "$T/.f$i.swp" "$T/f$i.py"
        else
            echo "# edit $trial-$n" >> "$T/f$i.py"
        fi
        echo "$i $n" >> "$WORK/edits$trial"
    done
    for p in "${pids[@]}"; do wait "$p"; done
    "$BIN" fix --gpu off --no-journal -j 2 "$T" > "$WORK/after$trial" 2>&1
    edits=$((edits + n))
    while read -r i n; do
        grep -qx "# edit $trial-$n" "$T/f$i.py" "$T/f$i.py".edit-kept-by-gpu-homogenize-* 2>/dev/null ||
            lost=$((lost + 1))
    done < "$WORK/edits$trial"
    kept=$((kept + $(find "$T" -name '*.edit-kept-by-gpu-homogenize-*' | wc -l)))
    changed=$((changed + $(cat "$WORK/out$trial".* | grep -c "changed on disk")))
    held=$((held + $(cat "$WORK/out$trial".* | grep -c "open for writing")))
    temps=$((temps + $(find "$T" -name '.gpu-homogenize-*.tmp' | wc -l)))
done
echo "  $edits edits during $TRIALS x 3 concurrent runs over $FILES files; $changed refused as changed, $held as held open, $kept versions kept aside"
expect '[ $lost -eq 0 ]' "edits lost: $lost"
expect '[ $temps -eq 0 ]' "temp files left after the next run: $temps"
finish
