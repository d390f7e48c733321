#!/usr/bin/env bash
# Runs the Node tests against the packed package, as a user gets it: `npm pack`, install the
# tarball into a throwaway app, and run tests/js there, so `import 'autocontext'` resolves to
# the installed package and never to the sources.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ ! -f dist/index.js ] || [ ! -f dist/wasm/autocontext_bg.wasm ]; then
  echo "test-node: dist/ is incomplete; run 'npm run build' first" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

tarball=$(npm pack --silent --pack-destination "$work" 2>/dev/null | tail -n 1)
mkdir "$work/app"
cp -R tests/js "$work/app/tests"
cd "$work/app"
printf '{ "name": "autocontext-test-app", "private": true, "type": "module" }\n' > package.json
npm install --silent --no-audit --no-fund --no-package-lock "$work/$tarball"

AUTOCONTEXT_README="$root/README.md" node --test tests/*.test.mjs
