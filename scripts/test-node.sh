#!/usr/bin/env bash
# Runs the Node tests against the packed package, as a user gets it: `npm pack`, install the
# tarball into a throwaway app, and run tests/js there, so `import 'autocontext'` resolves to
# the installed package and never to the sources.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/packed-app.sh
require_dist test-node
install_packed_app autocontext-test-app
cp -R tests/js "$work/app/tests"
cp -R tests/contract "$work/app/contract"
# The chat-loop examples run against the installed package too (tests/js/examples.test.mjs).
mkdir "$work/app/examples"
cp -R examples/openai-loop examples/anthropic-loop "$work/app/examples/"
cd "$work/app"
# The AI SDK integration is tested with the real `ai` package (a dev dependency, never a
# dependency of autocontext): link it and its peer from the repository's node_modules.
for dev in ai zod; do ln -s "$root/node_modules/$dev" "node_modules/$dev"; done

# The declarations as a TypeScript user sees them, under Node and bundler module resolution.
tsc="$root/node_modules/.bin/tsc"
"$tsc" --noEmit --strict --target es2022 --lib es2022,dom --module nodenext --moduleResolution nodenext tests/consumer.ts
"$tsc" --noEmit --strict --target es2022 --lib es2022,dom --module esnext --moduleResolution bundler tests/consumer.ts
# The formats and the AI SDK helpers against the `ai` package's own types (whose declarations
# need Node's; skipLibCheck spares them, the line above checks ours).
"$tsc" --noEmit --strict --skipLibCheck --target es2022 --lib es2022,dom --module nodenext --moduleResolution nodenext tests/consumer-formats.ts

AUTOCONTEXT_README="$root/README.md" node --test tests/*.test.mjs
