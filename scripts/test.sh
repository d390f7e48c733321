#!/usr/bin/env bash
# Every test: the Rust core natively (unit, integration, corpus replay), then the package as a
# user gets it (built, packed, installed) in Node, Deno, workerd and a browser.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
echo "== cost benchmark accounting (bench/cost)" >&2
node --test bench/cost/
echo "== the source tree (the Layout list of README.md: every file in an entry, imports only up the list, no cycle)" >&2
node scripts/check-tree.mjs
echo "== cargo fmt --check, cargo clippy -D warnings" >&2
cargo fmt --all --check
cargo fmt --check --manifest-path fuzz/Cargo.toml
cargo clippy --quiet --workspace --all-targets --features cl100k -- -D warnings
echo "== cargo test (native core and counter; tests/generated.rs: the generated TypeScript and README table are fresh)" >&2
cargo test --quiet --workspace --features cl100k
echo "== fuzz (the kept corpus, then a fixed set of new inputs per target)" >&2
bash scripts/fuzz.sh --fixed
echo "== build" >&2
bash scripts/build.sh
echo "== node tests (packed package)" >&2
bash scripts/test-node.sh
echo "== Deno and workerd tests (packed package)" >&2
bash scripts/test-runtimes.sh
echo "== browser tests (packed package, headless Chromium)" >&2
bash scripts/test-browser.sh
echo "== packaging smoke test (exports conditions: node, deno, workerd, browser)" >&2
bash scripts/test-package.sh
