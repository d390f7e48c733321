#!/usr/bin/env bash
# The main job: set up, build everything, then compress the bundled long conversation offline
# (no LLM, no network) under a 32k-token window and print the before/after report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
node dist/cli.js compress examples/long-conversation.json --max-token 32000 "$@"
