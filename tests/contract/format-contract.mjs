// The guarantees in every wire format, for every runtime (Node, Deno, workerd). Plain ESM with
// no imports, so any runtime can load it: the caller passes the package's AutoContextMemory,
// validate and MemoryStore.
//
//   import { formatContract } from '../contract/format-contract.mjs';
//   for (const { name, run } of formatContract({ AutoContextMemory, validate, MemoryStore })) test(name, run);
//
// The same agent conversation (rounds of parallel tool calls with large results, each ending in
// an answer) is written in each format's own shape: Anthropic with signed thinking, the AI SDK
// with reasoning, the Responses API with reasoning items, Gemini with calls without ids and
// thought signatures. A case fails by throwing an Error that says what differed.

/** The uuid of every offload marker in a text. */
function markers(s) {
  return [...String(s).matchAll(/<!-- CONTEXT_OFFLOAD: uuid=([0-9a-f-]{36}) -->/g)].map((m) => m[1]);
}

export const FORMATS = ['openai', 'anthropic', 'ai-sdk', 'openai-responses', 'gemini'];

/** Text of `chars` characters that differs per seed. */
function filler(seed, chars) {
  const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'];
  let s = '';
  let k = seed * 7 + 3;
  while (s.length < chars) {
    k = (k * 1103515245 + 12345) % 2147483648;
    s += `${words[k % words.length]}${k % 11 === 0 ? '\n' : ' '}`;
  }
  return s.slice(0, chars);
}

/** One round in `format`: a question, two parallel calls, their results, an answer. */
function round(format, n, chars) {
  const ids = [`r${n}a`, `r${n}b`];
  const q = `Question ${n}: read m${n}_0 and m${n}_1.`;
  const out = (k) => `file m${n}_${k}:\n${filler(n * 2 + k, chars)}`;
  const a = `Answer ${n}.`;
  switch (format) {
    case 'openai':
      return [
        { role: 'user', content: q },
        { role: 'assistant', content: null, tool_calls: ids.map((id, k) => ({ id, type: 'function', function: { name: 'read_file', arguments: `{"path":"m${n}_${k}"}` } })) },
        ...ids.map((id, k) => ({ role: 'tool', tool_call_id: id, content: out(k) })),
        { role: 'assistant', content: a },
      ];
    case 'anthropic':
      return [
        { role: 'user', content: q },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: `Round ${n}: both files.`, signature: `SIG-${n}` },
            ...ids.map((id, k) => ({ type: 'tool_use', id, name: 'read_file', input: { path: `m${n}_${k}` } })),
          ],
        },
        { role: 'user', content: ids.map((id, k) => ({ type: 'tool_result', tool_use_id: id, content: out(k) })) },
        { role: 'assistant', content: [{ type: 'text', text: a }] },
      ];
    case 'ai-sdk':
      return [
        { role: 'user', content: q },
        {
          role: 'assistant',
          content: [
            { type: 'reasoning', text: `Round ${n}.`, providerOptions: { anthropic: { signature: `SIG-${n}` } } },
            ...ids.map((id, k) => ({ type: 'tool-call', toolCallId: id, toolName: 'read_file', input: { path: `m${n}_${k}` } })),
          ],
        },
        { role: 'tool', content: ids.map((id, k) => ({ type: 'tool-result', toolCallId: id, toolName: 'read_file', output: { type: 'text', value: out(k) } })) },
        { role: 'assistant', content: a },
      ];
    case 'openai-responses':
      return [
        { role: 'user', content: q },
        { type: 'reasoning', id: `rs_${n}`, summary: [{ type: 'summary_text', text: `Round ${n}.` }], encrypted_content: `ENC-${n}` },
        ...ids.map((id, k) => ({ type: 'function_call', id: `fc_${id}`, call_id: id, name: 'read_file', arguments: `{"path":"m${n}_${k}"}`, status: 'completed' })),
        ...ids.map((id, k) => ({ type: 'function_call_output', call_id: id, output: out(k) })),
        { type: 'message', id: `msg_${n}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: a, annotations: [] }] },
      ];
    case 'gemini':
      // No ids (as ADK sends them): the responses pair with the calls by name, in order.
      return [
        { role: 'user', parts: [{ text: q }] },
        {
          role: 'model',
          parts: [
            { text: `Round ${n}: both files.`, thought: true },
            ...ids.map((_, k) => ({ functionCall: { name: 'read_file', args: { path: `m${n}_${k}` } }, ...(k === 0 ? { thoughtSignature: `U0lHLT${n}` } : {}) })),
          ],
        },
        { role: 'user', parts: ids.map((_, k) => ({ functionResponse: { name: 'read_file', response: { output: out(k) } } })) },
        { role: 'model', parts: [{ text: a, thoughtSignature: `QW5z${n}` }] },
      ];
    default:
      throw new Error(`no conversation in format ${format}`);
  }
}

/** A conversation of `rounds` rounds and a last question, in `format`. */
export function conversation(format, rounds = 6, chars = 6_000) {
  const out = [];
  for (let n = 0; n < rounds; n++) out.push(...round(format, n, chars));
  out.push(...round(format, rounds, chars).slice(0, 1));
  return out;
}

function fail(what) {
  throw new Error(what);
}

/**
 * Every original is in the working list as it was added, or in an offload its markers reach
 * (an offload holds originals, or a summary the model saw whose own markers reach further).
 */
async function checkRecoverable(memory, originals, format) {
  const found = new Set(memory.messages().map((m) => JSON.stringify(m)));
  const queue = markers(JSON.stringify(memory.messages()));
  const seen = new Set();
  while (queue.length > 0) {
    const uuid = queue.pop();
    if (seen.has(uuid)) continue;
    seen.add(uuid);
    for (const m of await memory.reload(uuid)) {
      const text = JSON.stringify(m);
      found.add(text);
      queue.push(...markers(text));
    }
  }
  for (const [i, m] of originals.entries()) {
    const text = JSON.stringify(m);
    if (!found.has(text)) fail(`${format}: original ${i} is neither in the working list nor reachable by reload: ${text.slice(0, 200)}`);
  }
}

/** Every part with a signature (thinking, reasoning, a Gemini thought signature) in `out` is one of `originals`' parts. */
function checkSigned(out, originals, format) {
  const signedParts = (list) =>
    list.flatMap((m) => [...(Array.isArray(m.content) ? m.content : []), ...(Array.isArray(m.parts) ? m.parts : []), m]).filter((p) => {
      const t = JSON.stringify(p);
      return p !== null && typeof p === 'object' && !('role' in p && ('content' in p || 'parts' in p)) && /signature|thoughtSignature|encrypted_content/.test(t);
    });
  const known = new Set(signedParts(originals).map((p) => JSON.stringify(p)));
  for (const p of signedParts(out)) {
    if (!known.has(JSON.stringify(p))) fail(`${format}: a signed part was rewritten: ${JSON.stringify(p).slice(0, 200)}`);
  }
}

/**
 * The cases, one set per format.
 *
 * @param {{ AutoContextMemory: any, validate: any, MemoryStore: any }} pkg - the package's `AutoContextMemory`, `validate` and `MemoryStore`
 * @returns {{ name: string, run: () => Promise<void> }[]}
 */
export function formatContract({ AutoContextMemory, validate, MemoryStore }) {
  const cases = [];
  for (const format of FORMATS) {
    cases.push({
      name: `${format}: untouched messages come back byte-exact and valid, and restore`,
      run: async () => {
        const messages = conversation(format);
        const memory = new AutoContextMemory({ format, maxToken: 10_000_000 });
        memory.add(messages);
        if (JSON.stringify(memory.messages()) !== JSON.stringify(messages)) fail(`${format}: the list changed on its way through`);
        const problems = validate(messages, format);
        if (problems.length > 0) fail(`${format}: ${JSON.stringify(problems)}`);
        const restored = AutoContextMemory.fromJSON(memory.toJSON());
        if (JSON.stringify(restored.messages()) !== JSON.stringify(messages)) fail(`${format}: the restored list differs`);
      },
    });
    for (const llm of [false, true]) {
      cases.push({
        name: `${format}: after every pass ${llm ? 'with' : 'without'} a summarizer, valid, nothing lost, signed parts intact`,
        run: async () => {
          const messages = conversation(format, 8, 6_000);
          const summarize = llm ? ({ kind, prompt }) => `Summary (${kind}) of ${prompt.length} characters.` : undefined;
          const memory = new AutoContextMemory({ format, maxToken: 12_000, store: new MemoryStore(), sessionId: `contract-${format}`, summarize });
          let passes = 0;
          for (const m of messages) {
            const model = m.role === 'assistant' || m.role === 'model' || m.type === 'reasoning';
            const first = model && !['assistant', 'model'].includes(memory.messages().at(-1)?.role) && memory.messages().at(-1)?.type !== 'reasoning';
            if (first) {
              const r = await memory.compressIfNeeded();
              if (r.compressed) passes++;
              if (!(r.underTarget || r.exhausted)) fail(`${format}: over the target without a reason: ${JSON.stringify(r).slice(0, 300)}`);
              const problems = memory.validate();
              if (problems.length > 0) fail(`${format}: invalid after a pass: ${JSON.stringify(problems)}`);
              checkSigned(memory.messages(), messages, format);
            }
            memory.add(m);
          }
          await memory.compressIfNeeded();
          if (passes === 0) fail(`${format}: no pass compressed anything`);
          if (memory.validate().length > 0) fail(`${format}: invalid at the end: ${JSON.stringify(memory.validate())}`);
          const body = validate(memory.messages(), format);
          if (body.length > 0) fail(`${format}: validate() of messages(): ${JSON.stringify(body)}`);
          checkSigned(memory.messages(), messages, format);
          await checkRecoverable(memory, messages, format);
          if (JSON.stringify(await memory.originalMessages()) !== JSON.stringify(messages)) fail(`${format}: the original log is not the conversation`);
        },
      });
    }
    cases.push({
      name: `${format}: a store that fails leaves the working list as it was`,
      run: async () => {
        const messages = conversation(format, 4, 6_000);
        const store = { get: async () => null, put: async () => { throw new Error('disk full'); }, delete: async () => {} };
        const memory = new AutoContextMemory({ format, maxToken: 6_000, store });
        memory.add(messages);
        const before = JSON.stringify(memory.messages());
        let error;
        await memory.compressIfNeeded().catch((e) => (error = e));
        if (error?.code !== 'STORE_FAILED') fail(`${format}: expected STORE_FAILED, got ${error?.code ?? 'no error'}`);
        if (error.cause?.message !== 'disk full') fail(`${format}: the store's error is not the cause`);
        if (JSON.stringify(memory.messages()) !== before) fail(`${format}: the working list changed`);
      },
    });
    cases.push({
      name: `${format}: bad messages are typed errors naming the index, and nothing is added`,
      run: async () => {
        const memory = new AutoContextMemory({ format });
        memory.add(conversation(format, 1, 100));
        const n = memory.messages().length;
        for (const bad of [42, { role: 'robot', content: 'x', parts: [] }, { role: 'user', content: 7, parts: 7 }]) {
          let error;
          try {
            memory.add([conversation(format, 1, 100)[0], bad]);
          } catch (e) {
            error = e;
          }
          if (error?.code !== 'INVALID_MESSAGE' || error.index !== n + 1) fail(`${format}: ${JSON.stringify(bad)}: got ${error?.code} at ${error?.index}`);
        }
        if (memory.messages().length !== n) fail(`${format}: a refused batch added messages`);
      },
    });
  }
  return cases;
}

/**
 * Runs every case in order and returns what happened, for runtimes without a test runner.
 *
 * @returns {Promise<{ name: string, ok: boolean, error?: string }[]>}
 */
export async function runFormatContract(pkg) {
  const results = [];
  for (const { name, run } of formatContract(pkg)) {
    try {
      await run();
      results.push({ name, ok: true });
    } catch (e) {
      results.push({ name, ok: false, error: e instanceof Error ? `${e.message}\n${e.stack ?? ''}` : String(e) });
    }
  }
  return results;
}
