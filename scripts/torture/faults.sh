#!/usr/bin/env bash
# Inputs and situations that used to stop the run: FIFOs swapped in mid-run, deeply nested
# files, closed or full stdout, out-of-range options, signals, quadratic files.
. "$(dirname "$0")/common.sh"
ROOT=$WORK/root; mkdir -p "$ROOT"; git init -q "$ROOT"

# A file swapped for a FIFO between read and write: the run must end.
hung=0
for trial in $(seq 1 10); do
    rm -rf "$ROOT"/*.py; for i in $(seq 1 60); do bad_py > "$ROOT/f$i.py"; done
    timeout 60 "$BIN" fix --gpu off --no-journal -j 1 "$ROOT" >/dev/null 2>&1 &
    pid=$!
    for i in $(seq 1 60); do rm -f "$ROOT/f$i.py"; mkfifo "$ROOT/f$i.py"; done
    wait $pid; rc=$?
    [ $rc -eq 124 ] && hung=$((hung + 1))
done
expect '[ $hung -eq 0 ]' "files swapped for FIFOs mid-run, 10 trials: $hung hung"
rm -f "$ROOT"/*.py

# Deeply nested but valid files: an error for that file, never an abort.
python3 - "$ROOT" <<'PY'
import sys
root = sys.argv[1]
head_py, head_rs = "import torch\n", 'fn main() { let d = "cuda:1"; '
cases = {
    "generics.rs": head_rs + "let x: " + "Vec<" * 275 + "u8" + ">" * 275 + " = todo!(); }\n",
    "blocks.rs": head_rs + "{" * 415 + "}" * 415 + " }\n",
    "calls.rs": head_rs + "f(" * 550 + ")" * 550 + "; }\n",
    "unary.rs": head_rs + "let x = " + "-" * 500000 + "1; }\n",
    "closures.rs": head_rs + "let x = " + "|| " * 100000 + "1; }\n",
    "parens.py": head_py + "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n",
    "not.py": head_py + "x = " + "not " * 200000 + "1\n",
    "power.py": head_py + "x = " + "2**" * 200000 + "2\n",
    "lambda.py": head_py + "x = " + "lambda: " * 200000 + "2\n",
    "blocks.py": head_py + "".join(" " * i + "if x:\n" for i in range(400)) + " " * 400 + "pass\n",
}
for name, text in cases.items():
    open(f"{root}/{name}", "w").write(text)
PY
bad_py > "$ROOT/good.py"
start=$(date +%s.%N)
out=$("$BIN" fix --gpu off --no-journal "$ROOT" 2>&1); rc=$?
secs=$(echo "$(date +%s.%N) - $start" | bc)
deep=$(echo "$out" | grep -c "nesting too deep")
expect '[ $rc -eq 2 ] && echo "$out" | grep -q "files*:"' "deep corpus: exit $rc (not 134), summary printed, $deep files refused as too deep, ${secs}s"
expect 'grep -q PCI_BUS_ID "$ROOT/good.py"' "the good file beside them is still fixed"
rm -f "$ROOT"/*

# Quadratic time in findings: 8k/16k/32k findings in one file.
for n in 8000 16000 32000; do
    python3 -c "import sys; print('import torch'); [print(f'torch.cuda.set_device(1)') for _ in range($n)]" > "$ROOT/many.py"
    start=$(date +%s.%N); "$BIN" scan "$ROOT/many.py" >/dev/null 2>&1
    echo "  scan of $n findings: $(echo "$(date +%s.%N) - $start" | bc) s"
done
rm -f "$ROOT"/*

# Closed and full stdout, out-of-range options.
for i in $(seq 1 50); do bad_py > "$ROOT/f$i.py"; done
"$BIN" scan "$ROOT" 2>"$WORK/err" | head -1 >/dev/null; rc=${PIPESTATUS[0]}
expect '[ $rc -ne 101 ] && ! grep -q panicked "$WORK/err"' "scan | head -1: exit $rc, no panic"
"$BIN" scan "$ROOT" >/dev/full 2>"$WORK/err"; rc=$?
expect '[ $rc -eq 2 ] && grep -q "No space left" "$WORK/err"' "scan > /dev/full: exit $rc with the reason"
for t in inf 1e20 -1 0 nan; do
    "$BIN" check --gpu off --gpu-timeout "$t" "$ROOT" >/dev/null 2>"$WORK/err"; rc=$?
    expect '[ $rc -eq 2 ] && ! grep -q panicked "$WORK/err"' "--gpu-timeout $t: exit $rc, $(head -1 "$WORK/err" | cut -c1-70)"
done

# A signal right after start, and Ctrl-C twice during a slow file.
early=0
for i in $(seq 1 20); do
    "$BIN" scan "$ROOT" >"$WORK/o" 2>&1 & pid=$!
    sleep 0.00$((RANDOM % 9)); kill -INT $pid; wait $pid; rc=$?
    [ $rc -eq 130 ] && [ ! -s "$WORK/o" ] && early=$((early + 1))
done
expect '[ $early -eq 0 ]' "SIGINT in the first ms, 20 trials: $early died without a summary"
finish
