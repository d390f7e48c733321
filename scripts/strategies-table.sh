#!/usr/bin/env bash
# Regenerates the comparison table of docs/strategies.md: every preset replays the shared
# corpus with the offline summarizer (tests/preset_replay.rs, release build, which also asserts
# the guarantees), and its report replaces the text between the comparison markers.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
target="${CARGO_TARGET_DIR:-target}"
cargo test --release --test preset_replay -- --nocapture
report="$target/strategies-report.md"
if [ ! -s "$report" ]; then
  echo "strategies-table: no $report (is the corpus there? set AUTOCONTEXT_CORPUS)" >&2
  exit 1
fi
node -e '
const fs = require("fs");
const [doc, report] = process.argv.slice(1);
const text = fs.readFileSync(doc, "utf8");
const start = "<!-- comparison:start -->", end = "<!-- comparison:end -->";
const a = text.indexOf(start), b = text.indexOf(end);
if (a < 0 || b < a) { console.error(`strategies-table: ${doc} has no comparison markers`); process.exit(1); }
const table = fs.readFileSync(report, "utf8").trim();
fs.writeFileSync(doc, text.slice(0, a + start.length) + "\n" + table + "\n" + text.slice(b));
console.error(`strategies-table: ${doc} updated`);
' docs/strategies.md "$report"
