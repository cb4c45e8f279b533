#!/usr/bin/env bash
# Gates trial (issue 18): real applications that select a GPU by hand AND declare gates
# (ruff, ruff format, black, isort, flake8 in pyproject.toml, ruff.toml, setup.cfg, tox.ini,
# .flake8, .pre-commit-config.yaml). For each app: every configured gate before, `fix` on a copy,
# the same gate after; prints one row per gate: findings before → after and the findings that
# are new (by file and code for linters, by file for formatters). New must be 0.
#
# 1. downloads the sdists (`pip download --no-binary NAME --no-deps`, cached in $TRIAL_DIR/sdist)
#    and unpacks them;
# 2. installs the gate tools once into $TRIAL_DIR/tools (versions printed);
# 3. runs the gates, `fix --gpu off --no-journal .`, the gates again; saves one diff per app
#    under $TRIAL_DIR/diffs.
#
# Env: GH_BIN (default target/release/gpu-homogenize), TRIAL_DIR (default target/gates-trial),
#      APPS (pinned specs). Exits 1 when a gate has a new finding.
set -euo pipefail
cd "$(dirname "$0")/.."
GH_BIN=$(realpath "${GH_BIN:-target/release/gpu-homogenize}")
TRIAL_DIR=${TRIAL_DIR:-target/gates-trial}
APPS=${APPS:-"f5-tts==1.1.22 llamafactory==0.9.5 audiocraft==1.3.0 parler-tts==0.2.3 TTS==0.22.0
    gfpgan==1.3.8 realesrgan==0.3.0 ultralytics==8.4.190 facexlib==0.3.0 diffusers==0.31.0
    sentence-transformers==3.3.1"}
mkdir -p "$TRIAL_DIR"/{sdist,src,fixed,diffs}
TRIAL_DIR=$(realpath "$TRIAL_DIR")
TOOLS=$TRIAL_DIR/tools
export PYTHONPATH=$TOOLS

if [[ ! -f $TOOLS/.installed ]]; then
    python3 -m pip install --quiet --target "$TOOLS" ruff==0.17.6 black==26.10.1 isort==9.0.2 flake8==7.5.0
    touch "$TOOLS/.installed"
fi
for t in ruff black isort flake8; do
    printf '%s: %s\n' "$t" "$(python3 -m $t --version 2>&1 | grep -m1 .)"
done

# --- 1. sdists --------------------------------------------------------------------------------
for spec in $APPS; do
    name=${spec%%==*}
    norm=$(echo "$name" | tr '-' '_')
    if ! ls "$TRIAL_DIR/sdist" | grep -qiE "^($name|$norm)-${spec#*==}\.(tar\.gz|zip)$"; then
        python3 -m pip download --quiet --no-binary "$name" --no-deps -d "$TRIAL_DIR/sdist" "$spec" >&2
    fi
done
for f in "$TRIAL_DIR"/sdist/*.tar.gz; do
    d=$TRIAL_DIR/src/$(basename "$f" .tar.gz)
    [[ -d $d ]] || tar xzf "$f" -C "$TRIAL_DIR/src"
done

# --- 2. which gates an app declares ------------------------------------------------------------
gates_of() {
    local d=$1 pre=$1/.pre-commit-config.yaml
    local ruffcfg=""
    if [[ -f $d/ruff.toml || -f $d/.ruff.toml ]] || grep -qs '^\[tool\.ruff' "$d/pyproject.toml"; then
        ruffcfg=1
    fi
    if [[ -n $ruffcfg ]] || grep -qsE 'id: *ruff$' "$pre"; then echo ruff; fi
    if grep -qsE 'id: *ruff-format' "$pre" || grep -qs '^\[tool\.ruff\.format\]' "$d/pyproject.toml" \
        || grep -qs '^\[format\]' "$d/ruff.toml" "$d/.ruff.toml"; then echo ruff-format; fi
    if grep -qs '^\[tool\.black\]' "$d/pyproject.toml" || grep -qsE 'id: *black$' "$pre"; then echo black; fi
    if [[ -f $d/.isort.cfg ]] || grep -qs '^\[tool\.isort\]' "$d/pyproject.toml" \
        || grep -qsE '^\[(tool:)?isort\]' "$d/setup.cfg" "$d/tox.ini" || grep -qsE 'id: *isort' "$pre"; then echo isort; fi
    if [[ -f $d/.flake8 ]] || grep -qsE '^\[flake8\]' "$d/setup.cfg" "$d/tox.ini" \
        || grep -qsE 'id: *flake8' "$pre"; then echo flake8; fi
}

# run_gate GATE DIR: one finding per line, `file<TAB>code` (formatters: `file<TAB>reformat`).
run_gate() {
    local gate=$1 d=$2
    (
        cd "$d"
        case $gate in
            ruff) python3 -m ruff check --no-cache --output-format concise --exit-zero . 2>/dev/null \
                | sed -nE 's/^([^:]+):[0-9]+:[0-9]+: ([A-Z]+[0-9]+).*/\1\t\2/p' ;;
            ruff-format) python3 -m ruff format --no-cache --check --output-format concise . 2>/dev/null \
                | sed -nE 's/^([^:]+):[0-9]+:[0-9]+: unformatted.*/\1\treformat/p' ;;
            black) python3 -m black --check . 2>&1 | sed -nE 's/^would reformat (.*)/\1\treformat/p' \
                | sed "s|^$d/||" ;;
            isort) python3 -m isort --check-only . 2>&1 \
                | sed -nE 's/^ERROR: (.*) Imports are incorrectly sorted.*/\1\tI001/p' | sed "s|^$d/||" ;;
            flake8) python3 -m flake8 --exit-zero . 2>/dev/null \
                | sed -nE 's/^\.?\/?([^:]+):[0-9]+:[0-9]+: ([A-Z]+[0-9]+).*/\1\t\2/p' ;;
        esac
    ) | sort
}

# new BEFORE AFTER: the findings of AFTER beyond those of BEFORE, per file and code.
new_findings() {
    python3 - "$1" "$2" <<'EOF'
import collections, sys
count = lambda p: collections.Counter(open(p).read().splitlines())
before, after = count(sys.argv[1]), count(sys.argv[2])
for key, n in sorted((after - before).items()):
    print(f"{key}\t+{n}")
EOF
}

# --- 3. trial ----------------------------------------------------------------------------------
status=0
printf '\n| app | gate | before | after | new |\n|---|---|---|---|---|\n'
for src in "$TRIAL_DIR"/src/*/; do
    app=$(basename "$src")
    mapfile -t gates < <(gates_of "$src")
    [[ ${#gates[@]} -gt 0 ]] || { echo "| $app | (no gate declared) | | | |"; continue; }
    fixed=$TRIAL_DIR/fixed/$app
    rm -rf "$fixed" && cp -a "$src" "$fixed"
    for g in "${gates[@]}"; do run_gate "$g" "$fixed" >"$TRIAL_DIR/$app.$g.before" || true; done
    (cd "$fixed" && "$GH_BIN" fix --gpu off --no-journal --format json . >"$TRIAL_DIR/$app.fix.json" 2>"$TRIAL_DIR/$app.fix.err") || true
    diff -ru "$src" "$fixed" >"$TRIAL_DIR/diffs/$app.diff" || true
    files=$(grep -c '^+++ ' "$TRIAL_DIR/diffs/$app.diff" || true)
    for g in "${gates[@]}"; do
        run_gate "$g" "$fixed" >"$TRIAL_DIR/$app.$g.after" || true
        new_findings "$TRIAL_DIR/$app.$g.before" "$TRIAL_DIR/$app.$g.after" >"$TRIAL_DIR/$app.$g.new"
        n=$(awk -F'+' '{s += $NF} END {print s + 0}' "$TRIAL_DIR/$app.$g.new")
        [[ $n -eq 0 ]] || status=1
        printf '| %s (%s files fixed) | %s | %s | %s | %s |\n' "$app" "$files" "$g" \
            "$(wc -l <"$TRIAL_DIR/$app.$g.before")" "$(wc -l <"$TRIAL_DIR/$app.$g.after")" "$n"
    done
done
echo
for f in "$TRIAL_DIR"/*.new; do
    [[ -s $f ]] && { echo "== $(basename "$f")"; head -20 "$f"; }
done
exit $status
