// A Mastra agent whose every model call stays inside the model's context window: autocontext's
// input processor compresses the prompt Mastra builds before each call (Mastra's own history
// keeps every message), and the agent gets the context_reload tool for what was offloaded.
//
// `createAssistant` takes any model Mastra takes, so the same code runs against a real provider
// and against the AI SDK's mock model in tests/js/mastra.test.mjs. Run it for real with:
//
//   npm install autocontext @mastra/core zod && OPENAI_API_KEY=... node agent.mjs "What is in package.json?"
import { Agent } from '@mastra/core/agent';
import { AutoContextMemory } from 'autocontext';
import { autocontextProcessor } from 'autocontext/mastra';

/**
 * An agent with autocontext in front of its model.
 *
 * @param {object} args
 * @param {import('@mastra/core/agent').AgentConfig['model']} args.model - a model id or a model object
 * @param {Record<string, unknown>} [args.tools] - the agent's own tools
 * @param {import('autocontext').AutoContextOptions<'ai-sdk'>} [args.memory] - the memories' options (window, summarize, store, ...)
 */
export function createAssistant({ model, tools = {}, memory = {} }) {
  // The glue: one memory per thread, the processor, the reload tool.
  const context = autocontextProcessor((threadId) => new AutoContextMemory({ format: 'ai-sdk', maxToken: 128_000, sessionId: threadId, ...memory }));
  const agent = new Agent({
    id: 'assistant',
    name: 'assistant',
    instructions: 'You are a careful assistant. Read files before you answer questions about them.',
    model,
    tools: { ...tools, ...context.tools },
    inputProcessors: [context],
  });
  return { agent, context };
}

// Run directly: one tool that reads files, a real model through Mastra's model router.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { createTool } = await import('@mastra/core/tools');
  const { z } = await import('zod');
  const { readFile } = await import('node:fs/promises');
  const read_file = createTool({
    id: 'read_file',
    description: 'Read a text file',
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }) => readFile(path, 'utf8'),
  });
  const { agent } = createAssistant({ model: 'openai/gpt-5-mini', tools: { read_file } });
  const result = await agent.generate(process.argv[2] ?? 'What is in package.json?', { maxSteps: 20 });
  console.log(result.text);
}
