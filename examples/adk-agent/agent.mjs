// A Google ADK agent (an LlmAgent run by an InMemoryRunner) whose every model call stays inside
// the model's context window: autocontext's plugin compresses each model request (the session
// keeps every event) and adds the context_reload tool for what was offloaded.
//
// `createRunner` takes any model ADK takes (a Gemini model name or a BaseLlm), so the same code
// runs against Gemini and against the scripted model of tests/js/adk.test.mjs. Run it for real with:
//
//   npm install autocontext @google/adk && GEMINI_API_KEY=... node agent.mjs "What is in package.json?"
import { InMemoryRunner, LlmAgent } from '@google/adk';
import { AutoContextMemory } from 'autocontext';
import { AutoContextPlugin } from 'autocontext/adk';

/**
 * A runner whose agent has autocontext in front of its model.
 *
 * @param {object} args
 * @param {string | import('@google/adk').BaseLlm} args.model - a Gemini model name, or any ADK model
 * @param {import('@google/adk').BaseTool[]} [args.tools] - the agent's own tools
 * @param {Omit<import('autocontext').AutoContextOptions<'gemini'>, 'format'>} [args.memory] - the memories' options (window, summarize, store, ...)
 */
export function createRunner({ model, tools = [], memory = {} }) {
  const agent = new LlmAgent({ name: 'assistant', model, tools, instruction: 'You are a careful assistant. Read files before you answer questions about them.' });
  // The glue: one memory per session; the plugin adds the context_reload tool to every request.
  const context = new AutoContextPlugin((sessionId) => new AutoContextMemory({ format: 'gemini', maxToken: 1_000_000, reservedTokens: 1_000, sessionId, ...memory }));
  return { runner: new InMemoryRunner({ agent, appName: 'assistant', plugins: [context] }), context };
}

/**
 * One question in a session: runs the agent until it answers, and returns its last text.
 *
 * @param {object} args
 * @param {InMemoryRunner} args.runner
 * @param {string} args.sessionId - a session of `runner.sessionService`
 * @param {string} args.question
 * @param {string} [args.userId]
 * @returns {Promise<string>}
 */
export async function ask({ runner, sessionId, question, userId = 'user' }) {
  let answer = '';
  for await (const event of runner.runAsync({ userId, sessionId, newMessage: { role: 'user', parts: [{ text: question }] } })) {
    const text = (event.content?.parts ?? []).flatMap((p) => (p.text !== undefined && !p.thought ? [p.text] : [])).join('');
    if (event.content?.role === 'model' && text !== '') answer = text;
  }
  return answer;
}

// Run directly: one tool that reads files, a real Gemini model.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { FunctionTool } = await import('@google/adk');
  const { readFile } = await import('node:fs/promises');
  const { z } = await import('zod');
  const read_file = new FunctionTool({
    name: 'read_file',
    description: 'Read a text file',
    parameters: z.object({ path: z.string() }),
    execute: async ({ path }) => readFile(path, 'utf8'),
  });
  const { runner } = createRunner({ model: process.env.GEMINI_MODEL ?? 'gemini-2.5-flash', tools: [read_file] });
  const session = await runner.sessionService.createSession({ appName: 'assistant', userId: 'user' });
  console.log(await ask({ runner, sessionId: session.id, question: process.argv[2] ?? 'What is in package.json?' }));
}
