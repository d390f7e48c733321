#!/usr/bin/env bash
# Packaging smoke test: `npm pack`, install the tarball into a throwaway project, and import the
# package there through each `exports` condition (node, deno, workerd, browser); see
# tests/package/smoke.test.mjs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ ! -f dist/index.js ] || [ ! -f dist/wasm/autocontext_bg.wasm ]; then
  echo "test-package: dist/ is incomplete; run 'npm run build' first" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

tarball=$(npm pack --silent --pack-destination "$work" 2>/dev/null | tail -n 1)
mkdir "$work/app"
cd "$work/app"
printf '{ "name": "autocontext-package-test-app", "private": true, "type": "module" }\n' > package.json
npm install --silent --no-audit --no-fund --no-package-lock "$work/$tarball"

cd "$root"
AUTOCONTEXT_APP_DIR="$work/app" node --test tests/package/*.test.mjs
