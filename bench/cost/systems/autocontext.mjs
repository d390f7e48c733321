// autocontext through its public API, as a host drives it: `add` every message, and before each
// model call `compressIfNeeded()` then `messages()`, which is the request. The offload store is
// the package's MemoryStore; originals named by the request's offload markers are reloaded with
// `reload(uuid)`: one marker at a time for the retention figure, transitively for the
// recoverability figure. The summarizer's input is what a host would send: the summarize
// request's system prompt and prompt, or, when the request shares the agent's prompt cache
// (`summarizeFromCache`), its messages, the agent's own request and an instruction.
import { summarizeSpan } from '../summarizer.mjs';

const MARKER = /CONTEXT_OFFLOAD: uuid=([0-9a-f-]{36})/g;

/** The facts preset's concepts (the same four as the preset comparison of docs/strategies.md). */
const CONCEPTS = [
  { keyword: 'error', description: 'errors and failures met, with their messages', factType: 'multiple' },
  { keyword: 'test', description: 'tests run and their results', factType: 'multiple' },
  { keyword: 'file', description: 'files read or changed, with their paths', factType: 'multiple' },
  { keyword: 'user', description: 'what the user asked for', factType: 'single' },
];

/**
 * What the engine is told a provider bills (its `prices` option), as the ledger prices that
 * provider (js/accounting.js): the engine prices its edits as the bill does.
 */
export const PROVIDER_PRICES = {
  anthropic: { cacheRead: 0.1, cacheWrite: 1.25, summarizeOutput: 5 },
  openai: { cacheRead: 0.1, cacheWrite: 1, summarizeOutput: 6 },
};

/** The arrival limits of the default's curve (its main knob; the default is 2000). */
export const CURVE_LIMITS = [1000, 1500, 3000, 5000, 10000];

/**
 * autocontext's systems: each preset, the default with `minFreedTokens: 4000`, the default with
 * summarize requests that share the agent's prompt cache, and the default at other arrival
 * limits (`curve`: the knob's curve in the charts, left out of the tables).
 */
export const AUTOCONTEXT_SYSTEMS = [
  { id: 'default', label: 'autocontext, default preset', options: {} },
  { id: 'prefix-summary', label: 'autocontext, prefix-summary', options: { preset: 'prefix-summary' } },
  { id: 'facts', label: 'autocontext, facts (4 concepts)', options: { preset: 'facts', concepts: CONCEPTS } },
  { id: 'turns', label: 'autocontext, turns', options: { preset: 'turns' } },
  { id: 'default-minfreed-4000', label: 'autocontext, default + minFreedTokens 4000', options: { minFreedTokens: 4000 } },
  { id: 'default-cache', label: 'autocontext, default + summarizeFromCache', options: { summarizeFromCache: true } },
  ...CURVE_LIMITS.map((limit) => ({ id: `default-limit-${limit}`, label: `autocontext, default + toolResultLimit ${limit}`, options: { toolResultLimit: limit }, curve: true })),
].map((s) => ({ ...s, family: 'autocontext', peer: false, start: (ctx) => start(s, ctx) }));

let sessions = 0;

async function start(system, { lib, window, ratio, log, clock, provider = 'anthropic' }) {
  const { AutoContextMemory, MemoryStore } = lib.autocontext;
  const summarize = (request) => {
    const text = summarizeSpan(request.prompt);
    const input = request.fromCache
      ? request.messages
      : [
          { role: 'system', content: request.system },
          { role: 'user', content: request.prompt },
        ];
    log.record(input, text);
    return text;
  };
  const memory = clock.timeSync(
    () =>
      new AutoContextMemory({
        maxToken: window,
        tokenRatio: ratio,
        summarize,
        store: new MemoryStore(),
        sessionId: `cost-${system.id}-${++sessions}`,
        prices: PROVIDER_PRICES[provider],
        ...system.options,
        ...JSON.parse(process.env.AUTOCONTEXT_BENCH_OPTIONS ?? '{}'),
      }),
  );
  return {
    add(message) {
      clock.timeSync(() => memory.add(message));
    },
    async request() {
      const result = await clock.time(() => memory.compressIfNeeded());
      const messages = clock.timeSync(() => memory.messages());
      const pass = result.compressed
        ? {
            freed: result.tokensBefore - result.tokensAfter,
            tokensBefore: result.tokensBefore,
            tokensAfter: result.tokensAfter,
            events: result.events.length,
            firstEventIndex: Math.min(...result.events.map((e) => e.index)),
            types: [...new Set(result.events.map((e) => e.type))],
          }
        : null;
      return { messages, pass, ownCount: memory.tokenCount() };
    },
    /** The originals behind one offload marker (one reload). */
    reloadOne: (uuid) => memory.reload(uuid),
    /** The originals behind every offload marker the request names, followed transitively. */
    async reloaded(request) {
      const seen = new Set();
      const out = [];
      const queue = [];
      const scan = (m) => {
        for (const [, uuid] of JSON.stringify(m).matchAll(MARKER)) {
          if (!seen.has(uuid)) {
            seen.add(uuid);
            queue.push(uuid);
          }
        }
      };
      request.forEach(scan);
      while (queue.length > 0) {
        const uuid = queue.shift();
        let originals;
        try {
          originals = await memory.reload(uuid);
        } catch {
          continue; // not reloadable: its originals count as lost
        }
        for (const m of originals) {
          out.push(m);
          scan(m);
        }
      }
      return out;
    },
  };
}
