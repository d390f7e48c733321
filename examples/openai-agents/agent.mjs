// An OpenAI Agents SDK agent whose conversation autocontext keeps inside the model's context
// window: the session holds the history, the model-input filter compresses before every model
// call of a run (a run of many tool calls grows its input between two sessions reads), and the
// agent gets the context_reload tool for what was offloaded.
//
// `createAgent` takes any Agents SDK model (a model name, or a `Model` object), so the same code
// runs against OpenAI and against the scripted fake model of tests/js/examples.test.mjs. Run it
// for real with:
//
//   npm install autocontext @openai/agents zod && OPENAI_API_KEY=... node agent.mjs "What is in package.json?"
import { Agent, run, tool } from '@openai/agents';
import { z } from 'zod';
import { AutoContextSession } from 'autocontext/openai-agents';

/**
 * The session of one conversation: the model's window, with the instructions and tool
 * definitions reserved.
 *
 * @param {import('autocontext/openai-agents').AutoContextSessionOptions} [options]
 */
export function createSession(options = {}) {
  return new AutoContextSession({ maxToken: 128_000, reservedTokens: 2_000, ...options });
}

/**
 * An agent that reads files, with the session's reload tool.
 *
 * @param {object} args
 * @param {AutoContextSession} args.session
 * @param {string | import('@openai/agents').Model} [args.model]
 * @param {(path: string) => string | Promise<string>} args.readFile
 */
export function createAgent({ session, model, readFile }) {
  const readFileTool = tool({
    name: 'read_file',
    description: 'Read a text file',
    parameters: z.object({ path: z.string() }),
    execute: ({ path }) => readFile(path),
  });
  return new Agent({
    name: 'Assistant',
    instructions: 'You are a careful assistant. Read files with read_file when needed.',
    model,
    tools: [readFileTool, session.reloadTool],
  });
}

/**
 * One question: the run reads the session's history, and every model call of it goes through
 * the session's filter.
 *
 * @param {object} args
 * @param {Agent} args.agent
 * @param {AutoContextSession} args.session
 * @param {string} args.question
 * @returns {Promise<string>} the agent's answer
 */
export async function ask({ agent, session, question }) {
  const result = await run(agent, question, { session, callModelInputFilter: session.callModelInputFilter, maxTurns: 30 });
  return String(result.finalOutput ?? '');
}

// Run directly: one question about local files.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { readFile } = await import('node:fs/promises');
  const session = createSession();
  const agent = createAgent({ session, model: process.env.OPENAI_MODEL ?? 'gpt-4.1-mini', readFile: (path) => readFile(path, 'utf8') });
  console.log(await ask({ agent, session, question: process.argv[2] ?? 'What is in package.json?' }));
}
