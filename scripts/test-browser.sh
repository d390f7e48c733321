#!/usr/bin/env bash
# Runs the browser tests in headless Chromium against the packed package: `npm pack`, install the
# tarball into a throwaway app, and serve that installed copy to the test page. Skips, saying why,
# when Chromium is missing (scripts/setup.sh installs it when it runs as root); under CI a
# missing Chromium is a failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/packed-app.sh
require_dist test-browser
if [ ! -x /usr/bin/chromium ]; then
  if [ "${CI:-}" = true ]; then
    echo "test-browser: /usr/bin/chromium is missing; CI must run the browser tests" >&2
    exit 1
  fi
  echo "test-browser: SKIPPED the browser tests: /usr/bin/chromium is missing and setup could not install it (not root). Install it with: apt-get install -y chromium" >&2
  exit 0
fi
install_packed_app autocontext-browser-test-app

AUTOCONTEXT_PACKAGE_DIR="$work/app/node_modules/autocontext" node --test tests/browser/*.test.mjs
