// The engine in a fresh process (the default build, o200k_base):
//
// Times are this process's CPU time (the machine is shared; wall-clock time under load says more
// about the neighbours), except the per-message growth figures, which are wall-clock medians.
//
//   growth   `add` + trigger check (`needsCompression`) per message as one conversation grows to
//            10,000 messages: the same ~1 KB messages in every window, so a cost that grows
//            with the conversation would show; beside it, what recounting the whole list with
//            gpt-tokenizer after each append costs at the same sizes.
//   pass     one full compression pass over the largest corpus trace, in a 32k window, with no
//            summarizer (the no-LLM ladder) and with an instant one (the whole ladder); the time
//            spent inside the host's store and summarize calls is measured and subtracted.
//   compress the stateless `compress()` on every corpus trace in a 32k window,
//   trim     LangChain.js `trimMessages` (strategy "last", gpt-tokenizer counting each message
//            once per call) on the same traces and budget: a process of its own, so neither
//            side's garbage is collected on the other's clock.
//
// Each section runs in its own process, with a full garbage collection before every timed run.
//
//   node --expose-gc bench/child-engine.mjs <growth|pass|compress|trim> <rounds> [--quick]
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { ourEntry } from './counters.mjs';
import { largestTrace, median, root, traces, unseen } from './texts.mjs';

const section = process.argv[2];
const rounds = Number(process.argv[3] ?? 5);
const quick = process.argv.includes('--quick');
const collect = () => globalThis.gc?.();
/**
 * A collection, then a moment for V8's helper threads to finish sweeping after it: a measurement
 * started right after `gc()` counts that sweeping as the measured code's CPU time (3-5 ms of a
 * pass's), work the bench asked for, not the code it measures.
 */
const settle = async () => {
  collect();
  await new Promise((resolve) => setTimeout(resolve, 20));
};
const { AutoContextMemory, compress } = await import(ourEntry('default'));
const { MemoryStore } = await import(pathToFileURL(join(root, 'dist', 'stores', 'memory.js')).href);
const gpt = await import('gpt-tokenizer/encoding/o200k_base');
const { trimMessages, HumanMessage, AIMessage, SystemMessage, ToolMessage } = await import('@langchain/core/messages');

const WINDOW = 32_000;
const ORDINARY = { disallowedSpecial: new Set() };
/** This process's CPU time so far, ms: what the work itself consumed, whatever the machine's load. */
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const all = traces();

/** `add` + `needsCompression` per message, in windows along a 10,000-message conversation. */
function growth() {
  const texts = all.flatMap((t) => t.messages).map((m) => (typeof m.content === 'string' ? m.content : '')).filter((s) => s.length >= 700 && s.length <= 1400);
  const pool = texts.slice(0, 100);
  const total = quick ? 2_000 : 10_000;
  // Each text new (numbered): the engine remembers the counts of texts it met lately, and a
  // conversation does not repeat its messages.
  const messages = Array.from({ length: total }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `${pool[i % pool.length]} (${i})` }));
  const memory = new AutoContextMemory({ maxToken: 1_000_000_000, msgThreshold: 10_000_000 });
  const perMessage = new Float64Array(total);
  for (let i = 0; i < total; i++) {
    const start = performance.now();
    memory.add(messages[i]);
    if (memory.needsCompression()) throw new Error('the budget was meant to be out of reach');
    perMessage[i] = performance.now() - start;
  }
  const windows = [100, 1_000, 5_000, 10_000].filter((n) => n <= total);
  const rows = windows.map((n) => {
    const slice = Array.from(perMessage.subarray(n - 100, n));
    // What a host without per-message counts pays: recount the whole list after the append.
    const list = messages.slice(0, n);
    const start = cpuMs();
    let recount = 0;
    for (const m of list) recount += 4 + gpt.countTokens(m.content, ORDINARY);
    const recountMs = cpuMs() - start;
    return { messages: n, medianUs: median(slice) * 1000, meanUs: (slice.reduce((a, b) => a + b, 0) / slice.length) * 1000, recountMs, recount };
  });
  return { total, tokens: memory.tokenCount(), rows };
}

/**
 * A store that measures the time spent in it (host time): the time inside its calls, which do
 * all their work synchronously (an in-memory map). Not call-to-settle: the engine starts a
 * pass's puts together, so those intervals would overlap each other and the engine's own work
 * between the calls (handing it the next payload), and subtracting them would undercount the
 * engine.
 */
class TimedStore {
  constructor() {
    this.inner = new MemoryStore();
    this.ms = 0;
    this.calls = 0;
    /** UTF-8 bytes handed to `put`. */
    this.written = 0;
  }
  #timed(fn) {
    const start = performance.now();
    this.calls += 1;
    try {
      return fn();
    } finally {
      this.ms += performance.now() - start;
    }
  }
  /** Takes the engine's values as bytes, as the store it wraps does. */
  get acceptsBytes() {
    return this.inner.acceptsBytes;
  }
  get(key) {
    return this.#timed(() => this.inner.get(key));
  }
  put(key, value) {
    this.written += typeof value === 'string' ? Buffer.byteLength(value) : value.length;
    return this.#timed(() => this.inner.put(key, value));
  }
  delete(key) {
    return this.#timed(() => this.inner.delete(key));
  }
}

/** One pass over the largest trace, engine time only. */
async function pass() {
  const alive = [];
  const largest = largestTrace(all);
  const out = { trace: largest.name, messages: largest.messages.length, modes: [] };
  for (const [k, mode] of ['no summarizer', 'instant summarizer'].entries()) {
    const runs = [];
    for (let r = 0; r < Math.max(rounds, 5); r++) {
      const messages = unseen(largest.messages, k * Math.max(rounds, 5) + r);
      const store = new TimedStore();
      let summarizeMs = 0;
      let summaries = 0;
      const summarize =
        mode === 'no summarizer'
          ? undefined
          : (request) => {
              const start = performance.now();
              summaries += 1;
              const text = `Summary of a ${request.kind} span: the requests, the tool calls and what they returned.`;
              summarizeMs += performance.now() - start;
              return text;
            };
      const memory = new AutoContextMemory({ maxToken: WINDOW, store, summarize, sessionId: `bench-${r}` });
      // Kept alive to the end: a memory dropped here would be freed by a finalizer in the middle
      // of a later run's pass, and that run would pay for it.
      alive.push(memory);
      await settle();
      const addStart = cpuMs();
      memory.add(messages);
      const addMs = cpuMs() - addStart;
      await settle();
      const start = cpuMs();
      const wallStart = performance.now();
      const result = await memory.compressIfNeeded();
      const wallMs = performance.now() - wallStart;
      const totalMs = cpuMs() - start;
      runs.push({
        addMs,
        totalMs,
        hostMs: store.ms + summarizeMs,
        engineMs: totalMs - store.ms - summarizeMs,
        engineWallMs: wallMs - store.ms - summarizeMs,
        storeCalls: store.calls,
        storeBytes: store.written,
        summaries,
        tokensBefore: result.tokensBefore,
        tokensAfter: result.tokensAfter,
        events: result.events.length,
        after: memory.messages().length,
      });
    }
    const pick = (k) => median(runs.map((x) => x[k]));
    out.modes.push({
      mode,
      engineMs: pick('engineMs'),
      engineWallMs: pick('engineWallMs'),
      hostMs: pick('hostMs'),
      totalMs: pick('totalMs'),
      addMs: pick('addMs'),
      storeCalls: runs[0].storeCalls,
      storeBytes: runs[0].storeBytes,
      summaries: runs[0].summaries,
      tokensBefore: runs[0].tokensBefore,
      tokensAfter: runs[0].tokensAfter,
      events: runs[0].events,
      after: runs[0].after,
    });
  }
  return out;
}

/** A corpus message as a LangChain message. */
function toLangChain(m) {
  const content = typeof m.content === 'string' ? m.content : '';
  switch (m.role) {
    case 'system':
      return new SystemMessage(content);
    case 'user':
      return new HumanMessage(content);
    case 'tool':
      return new ToolMessage({ content, tool_call_id: m.tool_call_id });
    default:
      return new AIMessage({
        content,
        tool_calls: (m.tool_calls ?? []).map((c) => {
          let args;
          try {
            args = JSON.parse(c.function.arguments);
          } catch {
            args = { input: c.function.arguments };
          }
          return { id: c.id, name: c.function.name, args: args !== null && typeof args === 'object' ? args : { input: args }, type: 'tool_call' };
        }),
      });
  }
}

/** LangChain's token counter, our accounting (4 per message, 3 per tool block), each message counted once per call. */
function langChainCounter() {
  const memo = new WeakMap();
  const one = (m) => {
    let n = memo.get(m);
    if (n !== undefined) return n;
    n = 4 + gpt.countTokens(typeof m.content === 'string' ? m.content : JSON.stringify(m.content), ORDINARY);
    for (const c of m.tool_calls ?? []) n += 3 + gpt.countTokens(c.name, ORDINARY) + gpt.countTokens(JSON.stringify(c.args), ORDINARY);
    if (m.getType() === 'tool') n += 3;
    memo.set(m, n);
    return n;
  };
  return (messages) => messages.reduce((sum, m) => sum + one(m), 0);
}

/** First round and median of the later rounds of `run` on every trace, CPU ms. */
async function perTrace(run) {
  const rows = [];
  for (const t of all) {
    const input = await run.prepare(t);
    const times = [];
    let kept;
    for (let r = 0; r < rounds; r++) {
      await settle();
      const start = cpuMs();
      kept = await run.once(input, r);
      times.push(cpuMs() - start);
    }
    rows.push({ trace: t.name, messages: t.messages.length, firstMs: times[0], ms: median(times.length > 1 ? times.slice(1) : times), kept });
  }
  return rows;
}

/** Our stateless compress(): wire messages in, compressed wire messages out. */
const compressRun = {
  prepare: (t) => t.messages,
  once: async (messages, r) => (await compress(messages, { maxToken: WINDOW, sessionId: `trim-${r}` })).messages.length,
};

/** LangChain's trimMessages on the same messages as LangChain objects (made beforehand). */
const trimRun = {
  prepare: (t) => t.messages.map(toLangChain),
  once: async (messages) =>
    (await trimMessages(messages, { maxTokens: Math.floor(WINDOW * 0.75), strategy: 'last', tokenCounter: langChainCounter(), includeSystem: true, startOn: 'human' })).length,
};

const sections = { growth, pass, compress: () => perTrace(compressRun), trim: () => perTrace(trimRun) };
if (!(section in sections)) throw new Error(`unknown section ${section}`);
process.stdout.write(JSON.stringify(await sections[section]()));
