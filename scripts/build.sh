#!/usr/bin/env bash
# Builds the npm package into dist/: the Rust core for wasm32, its JavaScript binding
# (wasm-bindgen, web target: one build for browsers, Workers, Deno and Node), then the
# TypeScript wrapper.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

cargo build --target wasm32-unknown-unknown --release --features cl100k
target_dir="${CARGO_TARGET_DIR:-target}"
rm -rf dist
wasm-bindgen "$target_dir/wasm32-unknown-unknown/release/autocontext.wasm" \
  --target web --remove-name-section --out-dir dist/wasm
node_modules/.bin/tsc -p tsconfig.json
chmod +x dist/cli.js
