#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ for a bounded time (default 20 s each; `scripts/fuzz.sh 600`
# for ten minutes each), starting from the corpus kept in fuzz/corpus/<target>. A crash, a
# panic, a timeout or an out-of-memory fails the run and leaves the input in
# $AUTOCONTEXT_FUZZ_OUT (default target/fuzz-out), printed as base64 too.
#
# It builds the targets with the flags `cargo fuzz build -s none` passes (libFuzzer with
# sanitizer coverage, debug assertions and overflow checks, `--cfg fuzzing`), with stable Rust
# and without installing cargo-fuzz, which would add minutes to every fresh machine. With
# cargo-fuzz installed (`cargo install cargo-fuzz`) the same targets run on stable Rust with
# `cd fuzz && cargo fuzz run <target> -s none` (no sanitizer: the default, AddressSanitizer,
# needs nightly). New interesting inputs go to the output directory, not to the repository;
# `scripts/fuzz.sh --merge` folds them into fuzz/corpus, minimized.
#
# `scripts/fuzz.sh --fixed` (what the test command runs) replays the kept corpus and then a
# fixed number of new inputs from a fixed seed per target, so a given commit always runs the
# same inputs: the test command never fails on an input that a luckier run happened to find.
# Longer, random runs are for hunting (`scripts/fuzz.sh 600`); what they find goes into
# fuzz/corpus with --merge and becomes part of every test run.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

merge=0
fixed=0
if [ "${1:-}" = "--merge" ]; then merge=1; shift; fi
if [ "${1:-}" = "--fixed" ]; then fixed=1; shift; fi
seconds=${1:-20}
targets=(parse ladder state)
out=${AUTOCONTEXT_FUZZ_OUT:-$PWD/target/fuzz-out}
host=$(rustc -vV | sed -n 's/^host: //p')

# libFuzzer is C++; libfuzzer-sys compiles it with the system's compiler.
if ! command -v c++ >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "fuzz: installing g++ for libFuzzer" >&2
    (export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq g++) >&2
  else
    echo "fuzz: no C++ compiler (c++) to build libFuzzer; install g++" >&2
    exit 1
  fi
fi

flags=(
  -Cpasses=sancov-module
  -Cllvm-args=-sanitizer-coverage-level=4
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
  -Cllvm-args=-sanitizer-coverage-pc-table
  -Cllvm-args=-sanitizer-coverage-trace-compares
  -Cllvm-args=-sanitizer-coverage-stack-depth
  -Cllvm-args=-simplifycfg-branch-fold-threshold=0
  --cfg fuzzing
  -Cdebug-assertions
  -Coverflow-checks
)
echo "fuzz: building ${targets[*]}" >&2
# --target keeps the instrumentation off build scripts and proc macros, as cargo-fuzz does.
RUSTFLAGS="${flags[*]}" cargo build --quiet --release --manifest-path fuzz/Cargo.toml --target "$host" --bins
bin=${CARGO_TARGET_DIR:-fuzz/target}/$host/release

mkdir -p "$out"
for t in "${targets[@]}"; do
  work="$out/$t"
  rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts"
  if [ "$fixed" = 1 ]; then
    # New inputs per target after the corpus: about 15 s each on a 2-core machine.
    case $t in parse) runs=400000 ;; *) runs=$(( $(ls "fuzz/corpus/$t" | wc -l) + 500 )) ;; esac
    budget=(-runs="$runs" -seed=1)
    echo "fuzz: $t, the kept corpus and then up to $runs runs from seed 1" >&2
  else
    budget=(-max_total_time="$seconds")
    echo "fuzz: $t for ${seconds}s" >&2
  fi
  if ! "$bin/$t" "$work/corpus" "fuzz/corpus/$t" "${budget[@]}" -timeout=30 -rss_limit_mb=2048 \
      -max_len=16384 -print_final_stats=1 -artifact_prefix="$work/artifacts/" >"$work/log" 2>&1; then
    tail -n 40 "$work/log" >&2
    for a in "$work"/artifacts/*; do
      [ -f "$a" ] && { echo "fuzz: $t failed on $a (base64):" >&2; base64 -w0 "$a" >&2; echo >&2; }
    done
    exit 1
  fi
  grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$work/log" | sed "s/^/fuzz: $t /" >&2 || true
  if [ "$merge" = 1 ]; then
    mkdir -p "$work/merged"
    # Edges only (no hit counts, no comparison operands): a small corpus that keeps the coverage.
    "$bin/$t" -merge=1 -use_counters=0 -use_cmp=0 "$work/merged" "fuzz/corpus/$t" "$work/corpus" >/dev/null 2>&1
    rm -f fuzz/corpus/"$t"/* && cp "$work"/merged/* "fuzz/corpus/$t/"
    echo "fuzz: $t corpus now $(ls "fuzz/corpus/$t" | wc -l) inputs" >&2
  fi
done
echo "fuzz: no crash in ${targets[*]}" >&2
