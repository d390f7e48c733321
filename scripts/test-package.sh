#!/usr/bin/env bash
# Packaging smoke test: `npm pack`, install the tarball into a throwaway project, and import the
# package there through each `exports` condition (node, deno, workerd, browser); see
# tests/package/smoke.test.mjs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/packed-app.sh
require_dist test-package
install_packed_app autocontext-package-test-app

AUTOCONTEXT_APP_DIR="$work/app" node --test tests/package/*.test.mjs
