#!/usr/bin/env bash
# Builds the npm package into dist/: the Rust core for wasm32 in three builds, their JavaScript
# bindings (wasm-bindgen, web target: one binding for browsers, Workers, Deno and Node), then
# the TypeScript wrapper, laid out once per build and bundled (one file per entry point and one
# per build's index; errors.js and each build's glue stay as written, see bundle.mjs):
#
#   dist/            autocontext        o200k_base (the default)
#   dist/full/       autocontext/full   o200k_base and cl100k_base
#   dist/lite/       autocontext/lite   no vocabulary, the estimator only (optimized for size)
#
# The builds differ only in cargo features and profile; the second and third relink the same
# compiled dependencies (the lite profile compiles them once more, for size).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
wasm_dir="${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown"

# Each build must be bound right after it is built: cargo writes every variant to the same path.
stage=$(mktemp -d)
inputs=$(mktemp -d)
trap 'rm -rf "$stage" "$inputs"' EXIT
build() { # <variant dir under dist/> <cargo profile> [cargo flags...]
  local out=$1 profile=$2
  shift 2
  cargo build --target wasm32-unknown-unknown --profile "$profile" "$@"
  # Exports that return one value each: V8 compiles a wrapper per multi-value signature up front.
  mkdir -p "$inputs/$out"
  node scripts/single-value.mjs "$wasm_dir/$profile/autocontext.wasm" "$inputs/$out/autocontext.wasm"
  wasm-bindgen "$inputs/$out/autocontext.wasm" --target web --remove-name-section --out-dir "$stage/$out/wasm"
  # Long strings into the module through the native encoder, not a loop a character at a time.
  node scripts/long-strings.mjs "$stage/$out/wasm/autocontext.js"
}
build . release
build full release --features cl100k
build lite lite --no-default-features

rm -rf dist
mkdir -p dist
cp -R "$stage/." dist/
node_modules/.bin/tsc -p tsconfig.json
node scripts/build-variants.mjs full
node scripts/build-variants.mjs lite
node scripts/bundle.mjs
chmod +x dist/cli.js
