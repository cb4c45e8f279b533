#!/usr/bin/env bash
# Metadata of rewritten files: owner, group, mode, setuid, xattrs, hard links, and
# read-only files, as root and as an unprivileged user (setpriv).
. "$(dirname "$0")/common.sh"
ROOT=$WORK/root; mkdir -p "$ROOT"; git init -q "$ROOT"; chmod 755 "$WORK"
stat_of() { stat -c '%U:%G %a' "$1"; }
fix() { "$BIN" fix --gpu off --no-journal "$@" >/dev/null 2>&1; }

if [ "$(id -u)" -eq 0 ]; then
    bad_py > "$ROOT/suid.py"; chown nobody:nogroup "$ROOT/suid.py"; chmod 4755 "$ROOT/suid.py"
    bad_py > "$ROOT/private.py"; chown nobody:nogroup "$ROOT/private.py"; chmod 600 "$ROOT/private.py"
    bad_py > "$ROOT/sgid.py"; chown nobody:nogroup "$ROOT/sgid.py"; chmod 3775 "$ROOT/sgid.py"
    fix "$ROOT"
    expect '[ "$(stat_of "$ROOT/suid.py")" = "nobody:nogroup 4755" ]' "root fixing nobody:nogroup 4755: $(stat_of "$ROOT/suid.py")"
    expect '[ "$(stat_of "$ROOT/private.py")" = "nobody:nogroup 600" ]' "root fixing nobody:nogroup 0600: $(stat_of "$ROOT/private.py")"
    expect '[ "$(stat_of "$ROOT/sgid.py")" = "nobody:nogroup 3775" ]' "root fixing nobody:nogroup 3775: $(stat_of "$ROOT/sgid.py")"
    expect 'grep -q PCI_BUS_ID "$ROOT/suid.py"' "and they were rewritten"
    if command -v setpriv >/dev/null; then
        U=$WORK/user; mkdir -p "$U"; git init -q "$U"
        bad_py > "$U/theirs.py"; chmod 644 "$U/theirs.py"        # root's file, not writable by nobody
        bad_py > "$U/suid.py"; chmod 4777 "$U/suid.py"           # root's setuid file, writable by all
        cp "$U/theirs.py" "$WORK/theirs.orig"
        chown nobody "$U"; chmod 777 "$U"                         # but nobody may write the directory
        setpriv --reuid=nobody --regid=nogroup --clear-groups "$BIN" fix --gpu off --no-journal "$U" >/dev/null 2>&1
        expect 'cmp -s "$U/theirs.py" "$WORK/theirs.orig"' "unprivileged: a file it cannot write is not replaced via its directory"
        m=$(stat_of "$U/suid.py")
        # Left as it is (the rewrite would change its owner: refused), or rewritten without setuid.
        expect '[ "$m" = "root:root 4777" ] || { [ "${m%% *}" != "root:root" ] && [ "${m#* }" != 4777 ]; }' "unprivileged: a root setuid file never becomes setuid for someone else ($m)"
    fi
fi

bad_py > "$ROOT/linked.py"; ln "$ROOT/linked.py" "$WORK/other-name.py"
fix "$ROOT/linked.py"
expect 'cmp -s "$ROOT/linked.py" "$WORK/other-name.py"' "a hard-linked file is refused (links stay one file)"
fix --break-hardlinks "$ROOT/linked.py"
expect 'grep -q PCI_BUS_ID "$ROOT/linked.py" && ! grep -q PCI_BUS_ID "$WORK/other-name.py"' "--break-hardlinks rewrites it, the other name keeps the original"

bad_py > "$ROOT/x.py"
if setfattr -n user.keep -v yes "$ROOT/x.py" 2>/dev/null; then
    fix "$ROOT/x.py"
    expect '[ "$(getfattr --only-values -n user.keep "$ROOT/x.py" 2>/dev/null)" = yes ]' "xattr user.keep kept"
else
    echo "  skip xattrs (setfattr unavailable or unsupported here)"
fi
finish
