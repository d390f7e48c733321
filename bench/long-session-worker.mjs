// A long session in the example Worker (examples/worker: one Durable Object per conversation,
// its memory saved in the object's storage every request, offloads in Workers KV), run in
// workerd through miniflare. The same stream as bench/long-session.mjs (the corpus traces back
// to back, call ids unique per repetition) goes through the Worker's HTTP API as one
// conversation, --batch messages per POST (whole groups: a message, or an assistant message
// with its tool results); each POST adds, compresses if needed and saves, as the example does.
// No model is configured, so passes run only the steps that need none.
//
// At checkpoints it records what the host pays for the conversation:
//
//   working   messages and tokens the model sees (the POST's answer)
//   workerd   the workerd process's resident memory now (VmRSS) and at its peak (VmHWM), MB;
//             also at rest (the Worker loaded and one count made, before the conversation)
//   engine    the engine's WebAssembly memory in the object (it grows and never shrinks), MB
//   state     the memory's saved state in the object's storage: its JSON text in millions of
//             characters (UTF-16 code units), the parts it is split into, and the object's
//             SQLite database size
//   request   median and slowest POST of the stretch since the previous checkpoint, ms
//
// Then workerd restarts on the same storage and the conversation is restored from it (an evicted
// object's next request): the same memory figures, and the time of that first request.
// Prints a table; writes target/bench/long-session-worker.json.
//
//   npm run build && node bench/long-session-worker.mjs [--messages N] [--batch M] [--max-token T] [--trace]
//
// --batch defaults to 100 messages per POST: 1,000 POSTs for 100,000 messages, about half a
// minute on a 2-core machine once the saved state stays the size of the working list (with
// every message added in the state, each save grows with the history: about 40 minutes).
// --smoke is --messages 1000. --trace prints progress every 1,000 messages on stderr. The
// harness wraps the example only to read its storage at checkpoints (a subclass of its Durable
// Object with one more method, and one more route); every message goes through the example's
// own code.
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Miniflare } from 'miniflare';
import { parse as parseToml } from 'smol-toml';
import { bundleWorker, checkoutPackage, moduleOptions } from '../tests/workerd/bundle.mjs';
import { checkpoints, longTraces, stream } from './long-stream.mjs';
import { memoryOf, workerdPid } from './workerd-proc.mjs';
import { root } from './texts.mjs';

const args = process.argv.slice(2);
const arg = (name, fallback) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
const smoke = args.includes('--smoke');
const limit = arg('--messages', smoke ? 1_000 : 100_000);
const batch = arg('--batch', 100);
const maxToken = arg('--max-token', 32_000);
const trace = args.includes('--trace');
const CHECKPOINTS = checkpoints(limit, [1_000, 10_000, 20_000, 50_000, 100_000, 200_000]);

const corpus = longTraces();
if (corpus.length === 0) {
  console.error('long-session-worker: no corpus (../shared/corpus); nothing to replay');
  process.exit(1);
}
if (!existsSync(join(root, 'dist', 'entrypoints', 'workerd.js'))) {
  console.error("long-session-worker: dist/ is not built; run 'npm run build' first");
  process.exit(1);
}

const work = join(root, 'target', 'bench', `long-session-worker-${process.pid}`);
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });

// The harness entry: the example's Worker, its Durable Object with a method that reports what
// it keeps in storage, and a route to call it.
const example = join(root, 'examples', 'worker', 'src', 'index.js');
const entry = join(work, 'entry.js');
// Evaluated before the example's imports: catches the engine's WebAssembly memory as the
// package instantiates its module.
writeFileSync(
  join(work, 'wasm-memory.js'),
  `export const memories = [];
const Native = WebAssembly.Instance;
WebAssembly.Instance = new Proxy(Native, {
  construct(target, args) {
    const instance = Reflect.construct(target, args);
    if (instance.exports.memory instanceof WebAssembly.Memory) memories.push(instance.exports.memory);
    return instance;
  },
});
`,
);
writeFileSync(
  entry,
  `import { memories } from './wasm-memory.js';
import example, { Conversation as ExampleConversation } from ${JSON.stringify(example)};
export class Conversation extends ExampleConversation {
  async benchState() {
    const parts = (await this.ctx.storage.get('state:parts')) ?? 0;
    let chars = 0;
    for (let i = 0; i < parts; i++) chars += (await this.ctx.storage.get('state:' + i)).length;
    const wasmBytes = memories.reduce((n, m) => n + m.buffer.byteLength, 0);
    return { parts, chars, databaseBytes: this.ctx.storage.sql?.databaseSize ?? null, wasmBytes };
  }
}
export default {
  async fetch(request, env, ctx) {
    const path = new URL(request.url).pathname.split('/').filter(Boolean);
    if (path[0] === 'bench-state') return Response.json(await env.CONVERSATIONS.get(env.CONVERSATIONS.idFromName(path[1])).benchState());
    return example.fetch(request, env, ctx);
  },
};
`,
);

// 'autocontext' and its subpaths resolve to this checkout's dist/.
const bundleDir = join(work, 'bundle');
await bundleWorker(entry, bundleDir, [checkoutPackage(root)]);

const config = parseToml(readFileSync(join(root, 'examples', 'worker', 'wrangler.toml'), 'utf8'));
const sqlite = new Set((config.migrations ?? []).flatMap((m) => m.new_sqlite_classes ?? []));
const persist = join(work, 'persist');
const options = {
  ...moduleOptions(bundleDir),
  compatibilityDate: config.compatibility_date,
  compatibilityFlags: config.compatibility_flags ?? [],
  durableObjects: Object.fromEntries(config.durable_objects.bindings.map((b) => [b.name, { className: b.class_name, useSQLite: sqlite.has(b.class_name) }])),
  kvNamespaces: config.kv_namespaces.map((k) => k.binding),
  bindings: { ...config.vars, MAX_TOKEN: String(maxToken) },
  durableObjectsPersist: join(persist, 'do'),
  kvPersist: join(persist, 'kv'),
};
let mf = new Miniflare(options);

/** Bytes under a directory. */
function du(dir) {
  if (!existsSync(dir)) return 0;
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) n += e.isDirectory() ? du(join(dir, e.name)) : statSync(join(dir, e.name)).size;
  return n;
}

let url = await mf.ready;
let pid = workerdPid();
// At rest: the Worker loaded and its counter warm (one count), no conversation yet.
if ((await mf.dispatchFetch(new URL('/tokens?text=hello', url))).status !== 200) throw new Error('the Worker does not answer');
const idle = memoryOf(pid);
const conversation = 'long';
const post = async (messages) => {
  const t0 = performance.now();
  const response = await mf.dispatchFetch(new URL(`/conversations/${conversation}/messages`, url), {
    method: 'POST',
    body: JSON.stringify({ messages }),
    headers: { 'content-type': 'application/json' },
  });
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text), bytes: text.length, ms: performance.now() - t0 };
};

const rows = [];
const source = stream(corpus);
let added = 0;
let requests = 0;
let compressed = 0;
let skipped = 0;
let last = null;
let pending = null;
const t0 = performance.now();
const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
for (const checkpoint of CHECKPOINTS) {
  const times = [];
  const segmentStart = performance.now();
  while (added < checkpoint) {
    const groups = [];
    let size = 0;
    while (size < batch && added + size < checkpoint) {
      const group = pending ?? source.next().value;
      pending = null;
      groups.push(group);
      size += group.length;
    }
    const before = added;
    const sent = await post(groups.flat());
    requests += 1;
    times.push(sent.ms);
    if (sent.status === 200) {
      last = sent;
      added += size;
      if (sent.body.compressed) compressed += 1;
    } else {
      // A group the trace itself gets wrong at a seam: the example refused the whole request
      // (and restored its memory from storage). Send the groups one by one, skipping the refused.
      for (const group of groups) {
        const one = await post(group);
        requests += 1;
        times.push(one.ms);
        if (one.status === 200) {
          last = one;
          added += group.length;
          if (one.body.compressed) compressed += 1;
        } else {
          skipped += group.length;
        }
      }
    }
    if (trace && Math.floor(added / 1000) > Math.floor(before / 1000)) {
      console.error(
        `${added} messages, ${requests} requests, working ${last?.body.messageCount} msgs ${last?.body.tokenCount} tokens, ` +
          `last POST ${sent.ms.toFixed(0)} ms, ${((performance.now() - t0) / 1000).toFixed(0)} s`,
      );
    }
  }
  const mem = memoryOf(pid);
  const state = await (await mf.dispatchFetch(new URL(`/bench-state/${conversation}`, url))).json();
  const row = {
    history: added,
    requests,
    compressed,
    working: last.body.messageCount,
    workingTokens: last.body.tokenCount,
    offloads: last.body.offloadCount,
    answerKB: last.bytes / 1e3,
    engineMB: state.wasmBytes / 1e6,
    rssMB: mem.rssMB,
    hwmMB: mem.hwmMB,
    stateMB: state.chars / 1e6,
    stateParts: state.parts,
    databaseMB: state.databaseBytes === null ? null : state.databaseBytes / 1e6,
    kvDiskMB: du(join(persist, 'kv')) / 1e6,
    medianMs: percentile(times, 0.5),
    maxMs: Math.max(...times),
    segmentS: (performance.now() - segmentStart) / 1000,
    wallS: (performance.now() - t0) / 1000,
  };
  rows.push(row);
  console.log(
    `${String(row.history).padStart(7)} messages | ${String(row.requests).padStart(5)} POSTs | working ${String(row.working).padStart(4)} msgs, ${String(row.workingTokens).padStart(6)} tokens | ` +
      `engine ${row.engineMB.toFixed(1).padStart(5)} MB | workerd RSS ${row.rssMB.toFixed(0).padStart(5)} MB, peak ${row.hwmMB.toFixed(0).padStart(5)} MB | state ${row.stateMB.toFixed(2).padStart(7)} MB in ${row.stateParts} parts, ` +
      `db ${row.databaseMB?.toFixed(1) ?? '–'} MB | POST median ${row.medianMs.toFixed(0)} ms, max ${row.maxMs.toFixed(0)} ms | ${row.wallS.toFixed(0)} s`,
  );
}

// Evicted and restored: workerd restarted on the same storage, the Worker loaded, then the
// working list asked for, which restores the memory from the object's storage.
await mf.dispose();
mf = new Miniflare(options);
url = await mf.ready;
pid = workerdPid();
if ((await mf.dispatchFetch(new URL('/tokens?text=hello', url))).status !== 200) throw new Error('the Worker does not answer');
const restIdle = memoryOf(pid);
const r0 = performance.now();
const working = await (await mf.dispatchFetch(new URL(`/conversations/${conversation}/messages`, url))).json();
const restoreMs = performance.now() - r0;
const restoredState = await (await mf.dispatchFetch(new URL(`/bench-state/${conversation}`, url))).json();
const restored = { idleRssMB: restIdle.rssMB, ...memoryOf(pid), engineMB: restoredState.wasmBytes / 1e6, working: working.messages.length, restoreMs };
await mf.dispose();
console.log(
  `restored after a restart: working ${restored.working} msgs in ${restored.restoreMs.toFixed(0)} ms | engine ${restored.engineMB.toFixed(1)} MB | ` +
    `workerd RSS ${restored.rssMB.toFixed(0)} MB, peak ${restored.hwmMB.toFixed(0)} MB (${restored.idleRssMB.toFixed(0)} MB at rest)`,
);
if (skipped > 0) console.log(`${skipped} messages the engine refused were skipped`);
const first = rows[0];
const end = rows[rows.length - 1];
console.log(
  `workerd idle ${idle.rssMB.toFixed(0)} MB; from ${first.history} to ${end.history} messages: RSS x${(end.rssMB / first.rssMB).toFixed(1)}, ` +
    `state x${(end.stateMB / first.stateMB).toFixed(1)}, POST median x${(end.medianMs / first.medianMs).toFixed(1)}; ${end.wallS.toFixed(0)} s in all`,
);
const result = { messages: limit, batch, maxToken, idleRssMB: idle.rssMB, idleHwmMB: idle.hwmMB, rows, restored, skipped };
mkdirSync(join(root, 'target', 'bench'), { recursive: true });
writeFileSync(join(root, 'target', 'bench', 'long-session-worker.json'), JSON.stringify(result, null, 2));
rmSync(work, { recursive: true, force: true });
