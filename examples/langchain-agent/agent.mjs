// A LangChain v1 agent (createAgent) whose every model call stays inside the model's context
// window: autocontext's middleware compresses each model request (the agent's state keeps every
// message) and registers the context_reload tool for what was offloaded.
//
// `createAssistant` takes any chat model, so the same code runs against a real provider and
// against the fake chat model in tests/js/langchain.test.mjs. Run it for real with:
//
//   npm install autocontext langchain @langchain/openai && OPENAI_API_KEY=... node agent.mjs "What is in package.json?"
import { createAgent } from 'langchain';
import { AutoContextMemory } from 'autocontext';
import { autocontextMiddleware } from 'autocontext/langchain';

/**
 * An agent with autocontext in front of its model.
 *
 * @param {object} args
 * @param {Parameters<typeof createAgent>[0]['model']} args.model - a chat model or a model id
 * @param {Parameters<typeof createAgent>[0]['tools']} [args.tools] - the agent's own tools
 * @param {import('@langchain/langgraph').BaseCheckpointSaver} [args.checkpointer] - keeps threads between calls
 * @param {import('autocontext').AutoContextOptions<'openai'>} [args.memory] - the memories' options (window, summarize, store, ...)
 */
export function createAssistant({ model, tools = [], checkpointer, memory = {} }) {
  return createAgent({
    model,
    tools,
    checkpointer,
    systemPrompt: 'You are a careful assistant. Read files before you answer questions about them.',
    // The glue: one memory per thread; the middleware adds the context_reload tool itself.
    middleware: [autocontextMiddleware((threadId) => new AutoContextMemory({ maxToken: 128_000, sessionId: threadId, ...memory }))],
  });
}

// Run directly: one tool that reads files, a real model.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { tool } = await import('langchain');
  const { readFile } = await import('node:fs/promises');
  const read_file = tool(async ({ path }) => readFile(path, 'utf8'), {
    name: 'read_file',
    description: 'Read a text file',
    schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  });
  const agent = createAssistant({ model: 'openai:gpt-5-mini', tools: [read_file] });
  const state = await agent.invoke({ messages: [{ role: 'user', content: process.argv[2] ?? 'What is in package.json?' }] });
  console.log(state.messages.at(-1)?.content);
}
