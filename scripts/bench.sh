#!/usr/bin/env bash
# The benchmark suite (`npm run bench`): builds the package (timed), runs the native benchmarks
# of the exact counter (benches/tokens.rs), of one pass (benches/pass.rs) and of a Worker's turn
# (benches/turn.rs), then the Node
# suite (bench/run.mjs: the counters, the engine, what a session costs with every system,
# bench/cost.mjs, and a 100,000-message session in the engine and in the example Worker under
# workerd, bench/long-session*.mjs), which writes docs/benchmarks.md. Extra arguments go to bench/run.mjs;
# `--smoke` makes every step tiny (a check that the suite runs, written to
# target/benchmarks-smoke.md). Not part of `npm test`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

start=$(date +%s%N)
bash scripts/build.sh
build_seconds=$(node -e "console.log((($(date +%s%N) - $start) / 1e9).toFixed(1))")
echo "bench: build took ${build_seconds} s" >&2

quick=()
for arg in "$@"; do
  if [ "$arg" = "--smoke" ]; then quick=(--quick); fi
done
cargo bench --bench tokens --features cl100k -- --out target/bench-native.json "${quick[@]}"
cargo bench --bench pass -- --out target/bench-pass-native.json "${quick[@]}"
cargo bench --bench turn -- --out target/bench-turn-native.json "${quick[@]}"
node bench/run.mjs --build-seconds "$build_seconds" "$@"
