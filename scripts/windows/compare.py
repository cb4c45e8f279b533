#!/usr/bin/env python3
"""The mission fixture through the Linux binary and the Windows .exe under Wine: same findings,
same diffs, same rewritten bytes, same GPU verdicts on the simulated driver, same reports.

    scripts/windows/compare.py LINUX_BIN WINDOWS_EXE LIBFAKEGPU_SO FAKEGPU_DLL

Each side works on its own copy of fixtures/superwhisper-v6 and its own driver directory. What
is compared, in this order (every step on both sides):

  scan --format json|sarif|text|gitlab       findings, statuses, summary
  fix --dry-run                              the unified diffs (exit 1: "would change")
  fix --gpu off                              the rewritten bytes of every file, the JSON outcome
  check --gpu require (simulated driver)     each file's GPU verdict, card, visible devices
  report --format md|json|html               the coordinator's report from the journal

Only what cannot be equal is normalised before comparing: the tree's absolute path (each side
prints its own), times and durations, the run's start stamps, and a Windows path's separators
inside text meant for people (`tools\\x.py` reads `tools/x.py`); JSON and SARIF are compared as
printed, paths included, so a backslash there is a difference. Exit 0 when all match; else each
difference is printed as a unified diff and the exit is 1.
"""

import difflib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(ROOT, "fixtures", "superwhisper-v6")
WINE = os.environ.get("WINE", "/usr/lib/wine/wine64")
TOPOLOGY = (
    "NVIDIA GeForce RTX 5060 Ti,16,12.0,0000:01:00.0,1;"
    "NVIDIA GeForce RTX 3090,24,8.6,0000:02:00.0,2"
)

# Keys whose values are clocks or durations: equal on no two runs, on one system or two.
TIME_KEY = re.compile(
    r"(_ms|_s|_secs|_seconds|_at|^at|started|finished|began|ended|duration|elapsed|timestamp"
    r"|time|date|run_id|journal_run)$"
)
ISO_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?( UTC)?")
DURATION = re.compile(r"\b\d+(\.\d+)?\s?(ms|s|min)\b")


class Side:
    def __init__(self, name, argv, work, driver_names, library):
        self.name = name
        self.argv = argv
        self.tree = os.path.join(work, name, "tree")
        self.driver = os.path.join(work, name, "driver")
        shutil.copytree(FIXTURE, self.tree, ignore=shutil.ignore_patterns(".gpu-homogenize"))
        os.makedirs(self.driver)
        for lib in driver_names:
            shutil.copy(library, os.path.join(self.driver, lib))

    def run(self, args, gpu=False):
        env = dict(os.environ)
        for var in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "PYTORCH_CUDA_ALLOC_CONF",
                    "FAKEGPU_LEAK_MIB", "FAKEGPU_HANG", "FAKEGPU_PROBE_DELAY_MS", "NO_COLOR"):
            env.pop(var, None)
        env["WINEDEBUG"] = "-all"
        if gpu:
            env["GPU_HOMOGENIZE_DRIVER_DIR"] = self.driver
            env["FAKEGPU_DEVICES"] = TOPOLOGY
            env["FAKEGPU_STATE"] = os.path.join(self.driver, "state")
        else:
            env["GPU_HOMOGENIZE_DRIVER_DIR"] = os.path.join(self.driver, "none")
        out = subprocess.run(self.argv + args, cwd=self.tree, env=env, capture_output=True,
                             timeout=900)
        if out.returncode < 0 and self.name == "windows":
            # Wine itself killed by a signal (its loader crashed; seen once as -11 after the
            # program had written all of its output): not the program's exit status, which is
            # an NTSTATUS when the program crashes. Said, and run once more.
            print(f"  note: wine was killed by signal {-out.returncode}; running it again")
            out = subprocess.run(self.argv + args, cwd=self.tree, env=env,
                                 capture_output=True, timeout=900)
        return out.returncode, out.stdout.decode("utf-8", "replace"), \
            out.stderr.decode("utf-8", "replace")


# A GPU process as text names its pid and command: each side's own (Windows tells a process's
# image, not its arguments).
PROCESS = re.compile(r"pid \d+ \(`[^`]*`\)")


def host_form(side):
    """How each side names this machine: Linux's host name; Windows's computer name, in capitals."""
    host = re.escape(socket.gethostname().split(".")[0])
    return re.compile(r"\b" + (host.upper() if side.name == "windows" else host) + r"\b")


def scrub_text(text, side):
    """Text for people: its own tree's path, clocks, processes, host and Windows separators made
    neutral."""
    text = PROCESS.sub("pid <PID> (<COMMAND>)", text)
    text = host_form(side).sub("<HOST>", text)
    for form in tree_forms(side):
        text = text.replace(form, "<TREE>")
    text = ISO_TIME.sub("<TIME>", text)
    text = DURATION.sub("<DURATION>", text)
    if side.name == "windows":
        # A relative path as a Windows user reads it: `tools\x.py`.
        text = re.sub(r"(?<=[\w.\-])\\(?=[\w.\-])", "/", text)
    return text


def tree_forms(side):
    """How each side names its own tree in output: Linux by its path; Wine by the Z: drive."""
    linux = side.tree
    forms = [linux]
    if side.name == "windows":
        windows = "Z:" + linux.replace("/", "\\")
        # URIs first: a drive path inside one must not be replaced alone.
        forms = ["file:///" + windows.replace("\\", "/"), windows,
                 windows.replace("\\", "\\\\"), "Z:" + linux, linux]
    else:
        forms = ["file://" + linux, linux]
    return forms


def scrub_json(value, side, key=""):
    if isinstance(value, dict) and "pid" in value and "origin" in value:
        # A GPU process of a check: its pid and command are each side's own.
        value = dict(value, pid="<PID>", command="<COMMAND>")
    if isinstance(value, dict):
        return {k: ("<TIME>" if TIME_KEY.search(k) and not isinstance(v, (dict, list))
                    else scrub_json(v, side, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_json(v, side, key) for v in value]
    if isinstance(value, str):
        value = PROCESS.sub("pid <PID> (<COMMAND>)", value)
        value = host_form(side).sub("<HOST>", value)
        for form in tree_forms(side):
            value = value.replace(form, "<TREE>")
        value = ISO_TIME.sub("<TIME>", value)
        return value
    return value


def compare(label, linux, windows, failures):
    if linux == windows:
        print(f"  same: {label}")
        return
    failures.append(label)
    print(f"  DIFFERENT: {label}")
    a = linux.splitlines(keepends=True)
    b = windows.splitlines(keepends=True)
    sys.stdout.writelines(difflib.unified_diff(a, b, "linux", "windows", n=2))
    print()


def as_json(text, side):
    try:
        doc = json.loads(text)
    except ValueError as e:
        return f"not JSON ({e}): {text[:2000]}"
    return json.dumps(scrub_json(doc, side), indent=1, sort_keys=True) + "\n"


def step(sides, label, args, failures, fmt="text", gpu=False, codes=None):
    results = []
    for side in sides:
        code, stdout, stderr = side.run(args, gpu=gpu)
        if fmt == "json":
            body = as_json(stdout, side)
        else:
            body = scrub_text(stdout, side)
        results.append((code, body, scrub_text(stderr, side)))
    (lc, lo, le), (wc, wo, we) = results
    if codes is not None and lc not in codes:
        failures.append(f"{label}: linux exit {lc}")
        print(f"  UNEXPECTED EXIT: {label}: linux {lc}\n{le}")
    compare(f"{label} (exit status)", f"{lc}\n", f"{wc}\n", failures)
    compare(f"{label} (stdout)", lo, wo, failures)
    compare(f"{label} (stderr)", le, we, failures)
    return results


def tree_bytes(side):
    files = {}
    for base, dirs, names in os.walk(side.tree):
        dirs[:] = [d for d in dirs if d != ".gpu-homogenize"]
        for name in names:
            path = os.path.join(base, name)
            rel = os.path.relpath(path, side.tree).replace(os.sep, "/")
            with open(path, "rb") as f:
                files[rel] = f.read()
    return files


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    linux_bin, windows_exe, so, dll = sys.argv[1:]
    for path in (linux_bin, windows_exe, so, dll):
        if not os.path.isfile(path):
            sys.exit(f"compare.py: {path} not found")
    failures = []
    with tempfile.TemporaryDirectory(prefix="gh-compare-") as work:
        linux = Side("linux", [os.path.abspath(linux_bin)], work,
                     ["libcuda.so", "libcuda.so.1", "libnvidia-ml.so.1"], so)
        windows = Side("windows", [WINE, os.path.abspath(windows_exe)], work,
                       ["nvcuda.dll", "nvml.dll"], dll)
        sides = [linux, windows]
        print("scan")
        step(sides, "scan --format json", ["scan", "--format", "json", "--no-cache"], failures,
             fmt="json", codes={1})
        step(sides, "scan --format sarif", ["scan", "--format", "sarif", "--no-cache"], failures,
             fmt="json", codes={1})
        step(sides, "scan --format gitlab", ["scan", "--format", "gitlab", "--no-cache"],
             failures, fmt="json", codes={1})
        step(sides, "scan (text)", ["scan", "--no-cache", "--color", "never"], failures,
             codes={1})
        print("fix --dry-run")
        step(sides, "fix --dry-run", ["fix", "--dry-run", "--no-cache", "--color", "never"],
             failures, codes={1})
        before = tree_bytes(linux)
        print("fix")
        step(sides, "fix --gpu off --format json",
             ["fix", "--gpu", "off", "--format", "json", "--no-cache"], failures, fmt="json",
             codes={0})
        lb, wb = tree_bytes(linux), tree_bytes(windows)
        changed = sorted(k for k in lb if before.get(k) != lb[k])
        print(f"  linux rewrote {len(changed)} files")
        if len(changed) < 40:
            failures.append(f"fix rewrote {len(changed)} files, expected the 40 of the mission")
        if sorted(lb) != sorted(wb):
            failures.append("fix: the two trees hold different files")
            compare("fix: files in the tree", "\n".join(sorted(lb)) + "\n",
                    "\n".join(sorted(wb)) + "\n", failures)
        differ = sorted(k for k in lb if k in wb and lb[k] != wb[k])
        for rel in differ:
            compare(f"fix: bytes of {rel}", lb[rel].decode("utf-8", "replace"),
                    wb[rel].decode("utf-8", "replace"), failures)
            if lb[rel].decode("utf-8", "replace") == wb[rel].decode("utf-8", "replace"):
                failures.append(f"fix: bytes of {rel} (not as text)")
        if not differ:
            print(f"  same: the rewritten bytes of all {len(lb)} files")
        print("check (simulated driver)")
        results = step(sides, "check --gpu require --format json",
                       ["check", "--gpu", "require", "--format", "json", "--no-cache"],
                       failures, fmt="json", gpu=True, codes={0})
        passed = results[0][1].count('"status": "passed"')
        print(f"  linux: {passed} GPU checks passed")
        if passed < 40:
            failures.append(f"check: {passed} GPU checks passed on Linux, expected 41")
        print("report")
        step(sides, "report --format json", ["report", "--format", "json", "--no-cache"],
             failures, fmt="json", codes={0})
        step(sides, "report --format md", ["report", "--format", "md", "--no-cache"], failures,
             codes={0})
        step(sides, "report --format html", ["report", "--format", "html", "--no-cache"],
             failures, codes={0})
    if failures:
        print(f"\n{len(failures)} differences between Linux and Windows (Wine):")
        for f in failures:
            print(f"  - {f}")
        return 1
    print("\nLinux and Windows (Wine) agree on every step.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
