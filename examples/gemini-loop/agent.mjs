// A tool-using chat loop on the Gemini API (`@google/genai`), with autocontext keeping the
// conversation inside the model's context window.
//
// `runTurn` takes any client with the official SDK's shape (`client.models.generateContent`), so
// the same code runs against `new GoogleGenAI({})` and against the scripted fake model of
// tests/js/examples.test.mjs. The system prompt stays the request's `config.systemInstruction`;
// model turns go back exactly as received (thought signatures included, which autocontext
// never edits in the current turn), and the responses to a turn's function calls go back in
// one user content, each with its call's id when the model gave one.
// Run it for real with:
//
//   npm install autocontext @google/genai && GEMINI_API_KEY=... node agent.mjs "What is in package.json?"
import { AutoContextMemory } from 'autocontext';

/**
 * @typedef {{ models: { generateContent(params: import('@google/genai').GenerateContentParameters):
 *   Promise<import('@google/genai').GenerateContentResponse> } }} Client
 */

/**
 * A memory of Gemini contents; the system prompt and the tool declarations are sent beside
 * them, so `reservedTokens` counts them.
 *
 * @param {Omit<import('autocontext').AutoContextOptions<'gemini'>, 'format'>} [options]
 * @returns {AutoContextMemory<'gemini'>}
 */
export function createMemory(options = {}) {
  return new AutoContextMemory({ maxToken: 1_000_000, reservedTokens: 2_000, ...options, format: 'gemini' });
}

/**
 * One user turn: adds the user's message, then lets the model work (calling functions, reading
 * their responses) until it answers, compressing the conversation before every model call.
 *
 * @param {object} args
 * @param {Client} args.client - `new GoogleGenAI({})`, or anything with its `models.generateContent`
 * @param {AutoContextMemory<'gemini'>} args.memory - a memory made with `format: 'gemini'`
 * @param {string} args.model
 * @param {string} args.system - the system instruction (counted in the memory's `reservedTokens`)
 * @param {import('@google/genai').FunctionDeclaration[]} args.tools - the host's function declarations
 * @param {(name: string, args: Record<string, unknown>) => unknown} args.runTool - runs one of them (sync or async)
 * @param {string} args.userText
 * @param {number} [args.maxSteps]
 * @returns {Promise<string>} the model's answer
 */
export async function runTurn({ client, memory, model, system, tools, runTool, userText, maxSteps = 25 }) {
  memory.add({ role: 'user', parts: [{ text: userText }] });
  for (let step = 0; step < maxSteps; step++) {
    await memory.compressIfNeeded();
    const response = await client.models.generateContent({
      model,
      contents: memory.messages(),
      config: { systemInstruction: system, tools: [{ functionDeclarations: [...tools, memory.reloadTool()] }] },
    });
    memory.observeUsage(response.usageMetadata); // promptTokenCount calibrates the estimate
    const content = response.candidates?.[0]?.content;
    if (content === undefined) throw new Error('the model sent no candidate');
    memory.add(content);
    const calls = (content.parts ?? []).flatMap((p) => (p.functionCall === undefined ? [] : [p.functionCall]));
    if (calls.length === 0) return (content.parts ?? []).flatMap((p) => (p.text !== undefined && !p.thought ? [p.text] : [])).join('');
    /** @type {import('@google/genai').Part[]} */
    const parts = [];
    for (const call of calls) {
      const name = call.name ?? '';
      const output = name === 'context_reload' ? await memory.handleReloadCall(call) : await runTool(name, call.args ?? {});
      parts.push({ functionResponse: { ...(call.id === undefined ? {} : { id: call.id }), name, response: { output } } });
    }
    memory.add({ role: 'user', parts });
  }
  throw new Error(`no answer after ${maxSteps} model calls`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { GoogleGenAI } = await import('@google/genai');
  const { readFile } = await import('node:fs/promises');
  const memory = createMemory({ maxToken: 1_000_000 });
  const tools = [{ name: 'read_file', description: 'Read a UTF-8 file', parametersJsonSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } }];
  const answer = await runTurn({
    client: new GoogleGenAI({}),
    memory,
    model: process.env.GEMINI_MODEL ?? 'gemini-2.5-flash',
    system: 'You are a careful assistant. Read files before answering.',
    tools,
    runTool: async (_name, args) => readFile(String(args.path), 'utf8').catch((e) => `error: ${e.message}`),
    userText: process.argv[2] ?? 'What is in package.json?',
  });
  console.log(answer);
}
