#!/usr/bin/env bash
# Runs the package in Deno and in workerd, as a user gets it: `npm pack`, install the tarball
# into a throwaway app holding copies of the examples and tests, then
#   - Deno (npm `deno`): deno test over tests/deno (DenoKVStore, the store contract,
#     examples/deno), importing the bare `autocontext` from the app's node_modules;
#   - workerd (npm `miniflare`): node --test over tests/workerd, which bundles examples/worker
#     and a store-contract Worker from the app and runs them in workerd;
#   - cold start per runtime (printed, not asserted).
# A runtime that cannot run is skipped with the reason; under CI (CI=true) a skip fails the run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/packed-app.sh
require_dist test-runtimes
install_packed_app autocontext-runtime-app
mkdir -p "$work/app/tests" "$work/app/examples" "$work/kv"
cp -R tests/contract tests/deno tests/workerd tests/runtimes "$work/app/tests/"
cp -R examples/deno examples/worker "$work/app/examples/"
cd "$work/app"

skipped=()
status=0
export DENO_NO_UPDATE_CHECK=1

deno="$root/node_modules/.bin/deno"
if deno_version=$("$deno" --version 2>/dev/null | head -n 1); then
  echo "== Deno: $deno_version" >&2
  "$deno" test --allow-read --allow-write="$work/kv" --unstable-kv --node-modules-dir=manual --no-lock --no-prompt \
    tests/deno/ -- "$work/kv" || status=$?
else
  skipped+=("Deno tests (tests/deno): no deno binary at node_modules/.bin/deno; run scripts/setup.sh (npm package deno)")
  deno=""
fi

if workerd_version=$("$root/node_modules/.bin/workerd" --version 2>/dev/null); then
  echo "== workerd: $workerd_version (miniflare)" >&2
  AUTOCONTEXT_APP="$work/app" node --test "$root"/tests/workerd/*.test.mjs || status=$?
else
  skipped+=("workerd tests (tests/workerd): no workerd binary at node_modules/.bin/workerd; run scripts/setup.sh (npm package miniflare)")
fi

echo "== cold start" >&2
node "$root/tests/runtimes/cold-start-report.mjs" "$work/app" "$deno" || status=$?

if [ ${#skipped[@]} -gt 0 ]; then
  for s in "${skipped[@]}"; do echo "test-runtimes: SKIPPED $s" >&2; done
  if [ "${CI:-}" = "true" ]; then
    echo "test-runtimes: CI must run every runtime" >&2
    status=1
  fi
fi
exit "$status"
