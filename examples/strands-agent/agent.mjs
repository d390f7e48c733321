// An AWS Strands agent whose every model call stays inside the model's context window:
// autocontext's conversation manager compresses the agent's history before each model call and
// gives the agent the context_reload tool for what was offloaded.
//
// `createAssistant` takes any Strands model, so the same code runs against Bedrock, Anthropic,
// OpenAI or Gemini and against the scripted model of tests/js/strands.test.mjs. Run it for real with:
//
//   npm install autocontext @strands-agents/sdk @aws-sdk/client-bedrock-runtime && node agent.mjs "What is in package.json?"
import { Agent } from '@strands-agents/sdk';
import { AutoContextConversationManager } from 'autocontext/strands';

/**
 * An agent with autocontext managing its conversation.
 *
 * @param {object} args
 * @param {import('@strands-agents/sdk').Model} [args.model] - a Strands model (Bedrock's by default)
 * @param {import('@strands-agents/sdk').Tool[]} [args.tools] - the agent's own tools
 * @param {import('autocontext/strands').StrandsConversationManagerOptions} [args.memory] - the memory's options (window, summarize, store, ...)
 */
export function createAssistant({ model, tools = [], memory = {} }) {
  return new Agent({
    ...(model === undefined ? {} : { model }),
    tools,
    printer: false,
    systemPrompt: 'You are a careful assistant. Read files before you answer questions about them.',
    // The glue: the conversation manager keeps the history inside the window and adds context_reload.
    conversationManager: new AutoContextConversationManager({ maxToken: 200_000, reservedTokens: 1_000, ...memory }),
  });
}

// Run directly: one tool that reads files, Strands' default model (Bedrock).
if (import.meta.url === `file://${process.argv[1]}`) {
  const { FunctionTool } = await import('@strands-agents/sdk');
  const { readFile } = await import('node:fs/promises');
  const read_file = new FunctionTool({
    name: 'read_file',
    description: 'Read a text file',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    callback: async (input) => readFile(String(/** @type {{ path: string }} */ (input).path), 'utf8'),
  });
  const result = await createAssistant({ tools: [read_file] }).invoke(process.argv[2] ?? 'What is in package.json?');
  console.log(String(result));
}
