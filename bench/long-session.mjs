// A long session: the corpus traces replayed back to back as one conversation (call ids made
// unique per repetition, one system message), added message by message with a pass whenever the
// trigger says so (32k window, offline summarizer, MemoryStore), up to --messages (default
// 100,000). At checkpoints it records what a host holding the session pays for it:
//
//   working   messages and tokens the model sees
//   history   messages added so far
//   memory    the engine's WebAssembly memory (it grows and never shrinks), in MB
//   toJSON    median time of three toJSON() calls, and the size of the state as JSON text
//
// The targets (DESIGN.md, performance budget): memory within 2x the working list, toJSON time
// and size independent of the history. Prints a table; writes target/bench/long-session.json.
//
//   npm run build && node --expose-gc bench/long-session.mjs [--messages N] [--smoke] [--trace]
//
// --smoke is --messages 1000.
// --trace prints progress every 100 messages and every pass over a second, on stderr.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ourEntry } from './counters.mjs';
import { root } from './texts.mjs';
import { checkpoints, longTraces, stream } from './long-stream.mjs';

const arg = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
};
const limit = arg('--messages', process.argv.includes('--smoke') ? 1_000 : 100_000);
const CHECKPOINTS = checkpoints(limit, [1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000]);

// The engine's WebAssembly memory: caught as the package instantiates its module.
const memories = [];
const keep = (instance) => {
  const m = instance?.exports?.memory;
  if (m instanceof WebAssembly.Memory) memories.push(m);
  return instance;
};
const NativeInstance = WebAssembly.Instance;
WebAssembly.Instance = new Proxy(NativeInstance, { construct: (target, args) => keep(Reflect.construct(target, args)) });
const nativeInstantiate = WebAssembly.instantiate;
WebAssembly.instantiate = async (...args) => {
  const out = await nativeInstantiate(...args);
  keep(out instanceof NativeInstance ? out : out.instance);
  return out;
};
const wasmBytes = () => memories.reduce((n, m) => n + m.buffer.byteLength, 0);

const { AutoContextMemory, offlineSummarize } = await import(ourEntry('default'));
const { MemoryStore } = await import(new URL('../dist/stores/memory.js', import.meta.url).href);
const gc = () => globalThis.gc?.();

const corpus = longTraces();
if (corpus.length === 0) {
  console.error('long-session: no corpus (../shared/corpus); nothing to replay');
  process.exit(1);
}

const memory = new AutoContextMemory({ maxToken: 32_000, summarize: offlineSummarize, store: new MemoryStore(), sessionId: 'long' });
const rows = [];
let added = 0;
let passes = 0;
let failed = 0;
let skipped = 0;
const started = process.cpuUsage();
const source = stream(corpus);
const trace = process.argv.includes('--trace');
const t0 = performance.now();
for (const checkpoint of CHECKPOINTS) {
  while (added < checkpoint) {
    const group = source.next().value;
    try {
      memory.add(group);
    } catch {
      skipped += group.length; // a group the trace itself gets wrong at a seam
      continue;
    }
    const before = added;
    added += group.length;
    if (trace && Math.floor(added / 100) > Math.floor(before / 100)) console.error(`${added} messages, ${passes} passes, ${(performance.now() - t0).toFixed(0)} ms`);
    if (memory.needsCompression()) {
      try {
        const p0 = performance.now();
        await memory.compressIfNeeded();
        if (trace && performance.now() - p0 > 1000) console.error(`  a pass at ${added} took ${(performance.now() - p0).toFixed(0)} ms`);
        passes += 1;
      } catch {
        failed += 1;
      }
    }
  }
  gc();
  const times = [];
  let size = 0;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const state = memory.toJSON();
    times.push(performance.now() - t0);
    size = JSON.stringify(state).length;
  }
  gc();
  const row = {
    history: added,
    workingKB: JSON.stringify(memory.messages()).length / 1e3,
    working: memory.messages().length,
    workingTokens: memory.tokenCount(),
    memoryMB: wasmBytes() / 1e6,
    toJsonMs: times.sort((a, b) => a - b)[1],
    stateKB: size / 1e3,
    passes,
    cpuS: (process.cpuUsage(started).user + process.cpuUsage(started).system) / 1e6,
  };
  rows.push(row);
  console.log(
    `${String(row.history).padStart(7)} messages | working ${String(row.working).padStart(4)} msgs, ${String(row.workingTokens).padStart(6)} tokens | ` +
      `${row.workingKB.toFixed(0).padStart(5)} KB | memory ${row.memoryMB.toFixed(1).padStart(6)} MB | toJSON ${row.toJsonMs.toFixed(1).padStart(7)} ms, ${row.stateKB.toFixed(0).padStart(7)} KB | ` +
      `${passes} passes, ${row.cpuS.toFixed(1)} s CPU`,
  );
}
if (failed > 0 || skipped > 0) console.log(`${failed} passes failed; ${skipped} messages the engine refused were skipped`);
const first = rows[0];
const last = rows[rows.length - 1];
console.log(
  `from ${first.history} to ${last.history} messages: toJSON time x${(last.toJsonMs / first.toJsonMs).toFixed(1)}, state size x${(last.stateKB / first.stateKB).toFixed(1)}, ` +
    `memory x${(last.memoryMB / first.memoryMB).toFixed(1)} (targets: within 2x)`,
);
mkdirSync(join(root, 'target', 'bench'), { recursive: true });
writeFileSync(join(root, 'target', 'bench', 'long-session.json'), JSON.stringify({ rows, failed, skipped }, null, 2));
