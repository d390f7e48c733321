// A tool-using chat loop on the Anthropic Messages API, with autocontext keeping the
// conversation inside the model's context window.
//
// `runTurn` takes any client with the official SDK's shape (`client.messages.create`), so the
// same code runs against `new Anthropic()` and against the scripted fake model of
// tests/js/examples.test.mjs. The system prompt stays the request's `system` parameter;
// assistant turns go back exactly as received (thinking blocks and their signatures included,
// which autocontext never edits), and each turn's tool results go back in one user message.
// Run it for real with:
//
//   npm install autocontext @anthropic-ai/sdk && ANTHROPIC_API_KEY=... node agent.mjs "What is in package.json?"
import { AutoContextMemory } from 'autocontext';

/**
 * @typedef {{ messages: { create(body: import('@anthropic-ai/sdk/resources/messages').MessageCreateParamsNonStreaming):
 *   Promise<import('@anthropic-ai/sdk/resources/messages').Message> } }} Client
 */

/**
 * One user turn: adds the user's message, then lets the model work (calling tools, reading
 * results) until it answers, compressing the conversation before every model call.
 *
 * @param {object} args
 * @param {Client} args.client - `new Anthropic()`, or anything with its `messages.create`
 * @param {AutoContextMemory<'anthropic'>} args.memory - a memory made with `format: 'anthropic'`
 * @param {string} args.model
 * @param {string} args.system - the system prompt (counted in the memory's `reservedTokens`)
 * @param {import('@anthropic-ai/sdk/resources/messages').Tool[]} args.tools - the host's tools (`{ name, description, input_schema }`)
 * @param {(name: string, input: any) => unknown} args.runTool - runs one of them (sync or async)
 * @param {string} args.userText
 * @param {number} [args.maxSteps]
 * @param {number} [args.maxTokens]
 * @returns {Promise<string>} the model's answer
 */
export async function runTurn({ client, memory, model, system, tools, runTool, userText, maxSteps = 25, maxTokens = 4096 }) {
  memory.add({ role: 'user', content: userText });
  for (let step = 0; step < maxSteps; step++) {
    await memory.compressIfNeeded();
    const response = await client.messages.create({
      model,
      max_tokens: maxTokens,
      system,
      messages: memory.messages(),
      tools: [...tools, memory.reloadTool()],
    });
    memory.add({ role: 'assistant', content: response.content });
    if (response.stop_reason !== 'tool_use') {
      return response.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
    }
    /** @type {import('@anthropic-ai/sdk/resources/messages').ToolResultBlockParam[]} */
    const results = [];
    for (const block of response.content) {
      if (block.type !== 'tool_use') continue;
      const output = block.name === 'context_reload' ? await memory.handleReloadCall(block) : await runTool(block.name, block.input);
      results.push({ type: 'tool_result', tool_use_id: block.id, content: typeof output === 'string' ? output : JSON.stringify(output) });
    }
    memory.add({ role: 'user', content: results });
  }
  throw new Error(`no answer after ${maxSteps} model calls`);
}

/**
 * A memory for this loop: the window of the model, the system prompt and tools reserved.
 *
 * @param {import('autocontext').AutoContextOptions<'anthropic'>} [options]
 */
export function createMemory(options = {}) {
  return new AutoContextMemory({ format: 'anthropic', maxToken: 200_000, reservedTokens: 2_000, ...options });
}

// Run directly: a demo with one tool that reads files.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { default: Anthropic } = await import('@anthropic-ai/sdk');
  const { readFile } = await import('node:fs/promises');
  /** @type {import('@anthropic-ai/sdk/resources/messages').Tool[]} */
  const tools = [
    {
      name: 'read_file',
      description: 'Read a text file',
      input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    },
  ];
  const answer = await runTurn({
    client: new Anthropic(),
    memory: createMemory(),
    model: process.env.ANTHROPIC_MODEL ?? 'claude-sonnet-4-5',
    system: 'You are a careful assistant. Read files with read_file when needed.',
    tools,
    runTool: (name, input) => (name === 'read_file' ? readFile(input.path, 'utf8') : `unknown tool ${name}`),
    userText: process.argv[2] ?? 'What is in package.json?',
  });
  console.log(answer);
}
