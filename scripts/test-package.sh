#!/usr/bin/env bash
# Packaging smoke test: `npm pack`, install the tarball into a throwaway project, and import the
# package there through each `exports` condition (node, deno, workerd, browser); see
# tests/package/smoke.test.mjs; lint the tarball with publint and attw first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/packed-app.sh
require_dist test-package
install_packed_app autocontext-package-test-app
tarball=$(ls "$work"/*.tgz)

# The tarball as registries and bundlers read it: publint reports nothing, not even a
# suggestion (it asks for `sideEffects`, which must list the entry files: `false` breaks
# webpack, whose tree-shaking would drop the entry that instantiates the WebAssembly module),
# and every entry resolves to declarations in every ESM resolution (attw, ESM-only profile).
lint=$(node_modules/.bin/publint run "$tarball" --strict --level suggestion 2>&1) || { echo "$lint" >&2; exit 1; }
grep -q 'All good!' <<<"$lint" || { echo "$lint" >&2; echo 'test-package: publint has remarks (above)' >&2; exit 1; }
report=$(node_modules/.bin/attw "$tarball" --profile esm-only --format table-flipped 2>&1) || { echo "$report" >&2; echo 'test-package: attw found problems (above)' >&2; exit 1; }
echo "publint: all good; attw (ESM-only profile): every entry resolves, with its declarations" >&2
# Subpaths that adapt a framework import it (an optional peer dependency): link it as a user
# of that subpath has it installed.
mkdir "$work/app/node_modules/@openai"
ln -s "$root/node_modules/@openai/agents" "$work/app/node_modules/@openai/agents"

AUTOCONTEXT_APP_DIR="$work/app" node --test tests/package/*.test.mjs
