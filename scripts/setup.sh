#!/usr/bin/env bash
# Installs what the build needs, once: the wasm32 target, the wasm-bindgen CLI matching the
# crate's pinned wasm-bindgen, and the npm packages. Fast when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

WASM_BINDGEN_VERSION=0.2.130

# Chromium for the browser tests: Debian's package (playwright-core drives it and never downloads
# a browser). Installed in the background while the rest of setup runs; awaited at the end.
chromium_pid=
chromium_log="${TMPDIR:-/tmp}/autocontext-setup-chromium.log"
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing chromium with apt-get in the background (about a minute, once)" >&2
    (export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq chromium) >"$chromium_log" 2>&1 &
    chromium_pid=$!
  else
    echo "setup: chromium is missing and setup is not running as root with apt-get, so it cannot install it: the browser tests will be skipped (install it with: apt-get install -y chromium)" >&2
  fi
fi

if command -v rustup >/dev/null 2>&1; then
  if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    rustup target add wasm32-unknown-unknown
  fi
  # The tests check formatting and lints.
  for c in rustfmt clippy; do
    rustup component list --installed | grep -q "^$c" || rustup component add "$c"
  done
fi

if ! wasm-bindgen --version 2>/dev/null | grep -q "$WASM_BINDGEN_VERSION"; then
  echo "setup: installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (a few minutes, once)" >&2
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --no-default-features
fi

# npm packages: install when node_modules is missing or older than the manifest or the lockfile.
stamp=node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ package.json -nt "$stamp" ] || { [ -f package-lock.json ] && [ package-lock.json -nt "$stamp" ]; }; then
  if [ -f package-lock.json ]; then
    # npm ci refuses a lockfile that lacks optional platform packages (deno's other-platform
    # binaries) when the registry in use does not serve them; npm install skips those and
    # installs the same locked versions of everything else.
    npm_log=$(mktemp)
    if ! npm ci --no-audit --no-fund 2>"$npm_log"; then
      echo "setup: npm ci refused ($(grep -m 1 'Missing:' "$npm_log" || grep -m 1 'error' "$npm_log" || true)); running npm install" >&2
      npm install --no-audit --no-fund
    fi
    rm -f "$npm_log"
  else
    npm install --no-audit --no-fund
  fi
fi

if [ -n "$chromium_pid" ]; then
  if ! wait "$chromium_pid" || [ ! -x /usr/bin/chromium ]; then
    cat "$chromium_log" >&2
    echo "setup: installing chromium failed (log above)" >&2
    exit 1
  fi
  echo "setup: chromium installed" >&2
fi
