// A tool-using chat loop on the OpenAI chat-completions API, with autocontext keeping the
// conversation inside the model's context window.
//
// `runTurn` takes any client with the official SDK's shape (`client.chat.completions.create`),
// so the same code runs against `new OpenAI()` and against the scripted fake model of
// tests/js/examples.test.mjs. Run it for real with:
//
//   npm install autocontext openai && OPENAI_API_KEY=... node agent.mjs "What is in /etc/hostname?"
import { AutoContextMemory } from 'autocontext';

/**
 * @typedef {{ chat: { completions: { create(body: import('openai/resources/chat/completions').ChatCompletionCreateParamsNonStreaming):
 *   Promise<import('openai/resources/chat/completions').ChatCompletion> } } }} Client
 */

/**
 * One user turn: adds the user's message, then lets the model work (calling tools, reading
 * results) until it answers, compressing the conversation before every model call.
 *
 * @param {object} args
 * @param {Client} args.client - `new OpenAI()`, or anything with its `chat.completions.create`
 * @param {AutoContextMemory<'openai'>} args.memory - a memory made with `format: 'openai'`
 * @param {string} args.model
 * @param {string} args.system - the system prompt (counted in the memory's `reservedTokens`)
 * @param {import('openai/resources/chat/completions').ChatCompletionTool[]} args.tools - the host's function tools
 * @param {(name: string, args: any) => unknown} args.runTool - runs one of them (sync or async)
 * @param {string} args.userText
 * @param {number} [args.maxSteps]
 * @returns {Promise<string>} the model's answer
 */
export async function runTurn({ client, memory, model, system, tools, runTool, userText, maxSteps = 25 }) {
  memory.add({ role: 'user', content: userText });
  for (let step = 0; step < maxSteps; step++) {
    await memory.compressIfNeeded();
    const response = await client.chat.completions.create({
      model,
      messages: [{ role: 'system', content: system }, ...memory.messages()],
      tools: [...tools, memory.reloadTool()],
    });
    const message = response.choices[0].message;
    memory.add(message);
    if (!message.tool_calls?.length) return message.content ?? '';
    for (const call of message.tool_calls) {
      if (call.type !== 'function') throw new Error(`custom tool calls are not handled here (${call.custom.name})`);
      const output =
        call.function.name === 'context_reload'
          ? await memory.handleReloadCall(call)
          : await runTool(call.function.name, JSON.parse(call.function.arguments || '{}'));
      memory.add({ role: 'tool', tool_call_id: call.id, content: typeof output === 'string' ? output : JSON.stringify(output) });
    }
  }
  throw new Error(`no answer after ${maxSteps} model calls`);
}

/**
 * A memory for this loop: the window of the model, the system prompt and tools reserved.
 *
 * @param {import('autocontext').AutoContextOptions<'openai'>} [options]
 */
export function createMemory(options = {}) {
  return new AutoContextMemory({ format: 'openai', maxToken: 128_000, reservedTokens: 2_000, ...options });
}

// Run directly: a shell-less demo with one tool that reads files.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { default: OpenAI } = await import('openai');
  const { readFile } = await import('node:fs/promises');
  /** @type {import('openai/resources/chat/completions').ChatCompletionTool[]} */
  const tools = [
    {
      type: 'function',
      function: {
        name: 'read_file',
        description: 'Read a text file',
        parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
      },
    },
  ];
  const answer = await runTurn({
    client: new OpenAI(),
    memory: createMemory(),
    model: process.env.OPENAI_MODEL ?? 'gpt-4o-mini',
    system: 'You are a careful assistant. Read files with read_file when needed.',
    tools,
    runTool: (name, args) => (name === 'read_file' ? readFile(args.path, 'utf8') : `unknown tool ${name}`),
    userText: process.argv[2] ?? 'What is in package.json?',
  });
  console.log(answer);
}
