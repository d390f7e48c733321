#!/usr/bin/env bash
# Runs the Node tests against the packed package, as a user gets it: `npm pack`, install the
# tarball into a throwaway app, and run tests/js there, so `import 'autocontext'` resolves to
# the installed package and never to the sources.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/packed-app.sh
require_dist test-node
# The SDK type copies (js/sdk/) must be what the pinned SDKs give.
node scripts/sdk-types.mjs --check
install_packed_app autocontext-test-app
cp -R tests/js "$work/app/tests"
cp -R tests/contract "$work/app/contract"
# The chat-loop and framework examples run against the installed package too
# (tests/js/examples.test.mjs, langchain.test.mjs, mastra.test.mjs, openai-agents.test.mjs).
mkdir "$work/app/examples"
cp -R examples/openai-loop examples/anthropic-loop examples/gemini-loop examples/langchain-agent examples/mastra-agent examples/openai-agents \
  examples/adk-agent examples/strands-agent "$work/app/examples/"
cd "$work/app"
# The AI SDK integration is tested with the real `ai` package (a dev dependency, never a
# dependency of autocontext): link it and its peer from the repository's node_modules.
# The providers' SDKs likewise, for the TypeScript consumer tests below, and Node's types
# outside node_modules/@types, so that only the examples' check sees them.
# The frameworks (langchain, @langchain/*, @mastra/core, @openai/agents, @google/adk,
# @strands-agents/sdk) likewise, for the adapters' tests.
mkdir node_modules/@anthropic-ai "$work/types"
for dev in ai zod openai @anthropic-ai/sdk @google langchain @langchain @mastra @openai @strands-agents; do ln -s "$root/node_modules/$dev" "node_modules/$dev"; done
ln -s "$root/node_modules/@types/node" "$work/types/node"

# The declarations as a TypeScript user sees them, under Node and bundler module resolution.
tsc="$root/node_modules/.bin/tsc"
"$tsc" --noEmit --strict --target es2022 --lib es2022,dom --module nodenext --moduleResolution nodenext tests/consumer.ts
"$tsc" --noEmit --strict --target es2022 --lib es2022,dom --module esnext --moduleResolution bundler tests/consumer.ts
# The formats and the AI SDK helpers against the `ai` package's own types (whose declarations
# need Node's; skipLibCheck spares them, the line above checks ours).
"$tsc" --noEmit --strict --skipLibCheck --target es2022 --lib es2022,dom --module nodenext --moduleResolution nodenext tests/consumer-formats.ts
# Against the providers' SDKs, strict and without casts: the message types both ways, the
# README's ```ts blocks (its agent loops) as a user pastes them, and the chat-loop examples.
node tests/readme-ts.mjs "$root/README.md" tests >/dev/null
"$tsc" --noEmit --strict --skipLibCheck --target es2022 --lib es2022,dom --module nodenext --moduleResolution nodenext tests/consumer-sdk.ts tests/consumer-agents.ts tests/consumer-gemini.ts tests/readme-*.ts
"$tsc" --noEmit --strict --skipLibCheck --allowJs --checkJs --target es2022 --lib es2022,dom --typeRoots "$work/types" --types node \
  --module nodenext --moduleResolution nodenext examples/openai-loop/agent.mjs examples/anthropic-loop/agent.mjs examples/gemini-loop/agent.mjs \
  examples/langchain-agent/agent.mjs examples/mastra-agent/agent.mjs examples/openai-agents/agent.mjs \
  examples/adk-agent/agent.mjs examples/strands-agent/agent.mjs
# The framework adapters' declarations against LangChain's, Mastra's, ADK's and Strands' own types.
"$tsc" --noEmit --strict --skipLibCheck --target es2022 --lib es2022,dom --module nodenext --moduleResolution nodenext tests/consumer-frameworks.ts

AUTOCONTEXT_README="$root/README.md" node --test tests/*.test.mjs

# The same tests on the oldest Node that package.json's `engines` admits (fetched once from the
# npm registry by scripts/oldest-node.sh), so that `engines` says what runs.
oldest=$(cd "$root" && bash scripts/oldest-node.sh)
if [ "$("$oldest" --version)" != "$(node --version)" ]; then
  echo "== node tests on the oldest Node supported, $("$oldest" --version)" >&2
  AUTOCONTEXT_README="$root/README.md" "$oldest" --test tests/*.test.mjs </dev/null
fi
