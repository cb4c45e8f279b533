#!/usr/bin/env bash
# File names with control characters (newlines, CR, ANSI escapes, DEL, C1 codes), workflow-
# command syntax, `%`, `:`, `,` and bytes that are not UTF-8: no output of `scan` (text, github,
# json), `fix --dry-run` or `fix` may hold a raw control character, and no GitHub line may be a
# workflow command that the tool did not mean.
. "$(dirname "$0")/common.sh"
NAMES=${NAMES:-200}
T=$WORK/names; mkdir -p "$T"; git init -q "$T"
python3 - "$T" "$NAMES" <<'PY'
import os, random, sys
root, n = sys.argv[1].encode(), int(sys.argv[2])
random.seed(19)
pieces = [b"\n", b"\r", b"\r\n", b"\x1b[31m", b"\x1b]0;title\x07", b"\x7f", b"\xc2\x9b", b"\t",
          b"::error file=x.py,line=1::", b"%0A", b"%", b":", b",", b"\\", b'"', b"\xff", b"\xe9"]
made = 0
while made < n:
    name = b"".join(random.choice(pieces + [b"a", b"b", b"c"]) for _ in range(random.randint(1, 6)))
    name = name.replace(b"/", b"") + b"%d.py" % made
    try:
        with open(os.path.join(root, name), "w") as f:
            f.write('import os\nimport torch\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\nx = torch.device("cuda:1")\n')
        made += 1
    except OSError:
        pass
PY
raw=0; commands=0; lines=0
check() {
    # $1: a file of output. Raw control characters other than the line feed and the tab that
    # separates --statistics columns.
    lines=$((lines + $(wc -l < "$1")))
    raw=$((raw + $(LC_ALL=C grep -c $'[\x01-\x08\x0b-\x1f\x7f]' "$1")))
    raw=$((raw + $(LC_ALL=C grep -c $'\xc2[\x80-\x9f]' "$1")))
}
for format in text github json; do
    "$BIN" scan --format "$format" "$T" > "$WORK/scan.$format" 2>&1; check "$WORK/scan.$format"
done
commands=$(grep '^::' "$WORK/scan.github" | grep -vc '^::[a-z]* title=gpu-homogenize ')
found=$(grep -c '^::error title=gpu-homogenize (GH' "$WORK/scan.github")
"$BIN" fix --dry-run --gpu off --no-journal "$T" > "$WORK/dry" 2>&1; check "$WORK/dry"
"$BIN" fix --gpu off --no-journal "$T" > "$WORK/fix" 2>&1; rc=$?; check "$WORK/fix"
fixed=$(grep -lZ PCI_BUS_ID "$T"/*.py | tr -cd '\0' | wc -c)
echo "  $NAMES names, $lines lines of output checked, $found GitHub annotations, $fixed files fixed"
expect '[ $raw -eq 0 ]' "lines with a raw control character: $raw"
expect '[ $commands -eq 0 ]' "GitHub lines that are not the tool's own annotations: $commands"
expect '[ $rc -eq 0 ] && [ $fixed -eq $NAMES ]' "fix rewrote every file (rc=$rc, $fixed of $NAMES)"
finish
