// One turn of a Worker, in workerd: what a request of a Cloudflare Worker costs in CPU time, the
// figure the free plan limits (10 ms a request).
//
// The turn is the one a Worker that keeps a conversation does on every request: restore the
// session from its saved state (`AutoContextMemory.load`), add the next message, run
// `compressIfNeeded()`, take `messages()`, save (`memory.save`), dispose of the memory (a memory
// left to the garbage collector grows the WebAssembly memory at every request until it runs,
// and each request pays for growing it). The conversation is the largest
// corpus trace in a 32,000-token window with no summarizer (a Worker without a model runs the
// steps that need none), in three cases:
//
//   whole trace  the saved state holds every message of the trace but the last, never
//                compressed (167k tokens): adding the last one triggers a pass over the whole
//                trace, the largest a turn can meet (a conversation brought to the Worker whole);
//   pass         the session as the Worker keeps it (the trace replayed a group at a time,
//                each request adding a message, or an assistant message with its tool results,
//                then compressing if needed), restored before the last group whose turn
//                triggered a pass: a turn of a live session that compresses;
//   no pass      the same session before the last group whose turn triggered none.
//
// The states are made and saved beforehand in Node (the default build); the Worker holds them
// in memory (a MemorySessionStore and a MemoryStore per run, filled by a request not measured)
// so that storage I/O, which the free plan does not count as CPU, stays out. Each run uses a
// copy of the trace with every text made new (`unseen` of bench/texts.mjs): the engine
// remembers the counts and identifiers of texts it met lately, and a turn measured on a
// conversation the isolate has handled before would find them.
//
// CPU time is read from outside (inside a Worker the clocks stand still between I/O): the
// workerd process's threads, from /proc, before and after each request. "Isolate thread" is the
// busiest thread of the request (the one that ran its JavaScript and WebAssembly); "all
// threads" adds V8's helper threads (optimizing compiler, garbage collector). An empty request
// on the same route costs what workerd itself spends on an HTTP request; its median is
// subtracted from both. Medians over the runs. The first turn of a fresh isolate (workerd
// restarted: the engine's code is compiled as it is first called and runs unoptimized; the
// Worker entry decoded the vocabulary in its startup) is measured apart, without a pass.
//
// The same turns are then measured in Node (a child process that has met none of the texts),
// phase by phase: load, add, compressIfNeeded, messages, save, dispose; `cargo bench --bench turn`
// measures them natively.
//
//   npm run build && node bench/worker-turn.mjs [--runs N] [--fresh N] [--smoke]
//
// Prints a table; writes target/bench/worker-turn.json.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Miniflare } from 'miniflare';
import { bundleWorker, checkoutPackage, moduleOptions } from '../tests/workerd/bundle.mjs';
import { ourEntry } from './counters.mjs';
import { largestTrace, median, root, traces, unseen } from './texts.mjs';
import { cpuBetween, threadCpuNs, workerdPid } from './workerd-proc.mjs';

const args = process.argv.slice(2);
if (args[0] === '--node') {
  // The child: the turns of the states in file args[1], in Node.
  process.stdout.write(JSON.stringify(await nodeTurns(JSON.parse(readFileSync(args[1], 'utf8')))));
  process.exit(0);
}
const smoke = args.includes('--smoke');
const arg = (name, fallback) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
const runs = arg('--runs', smoke ? 2 : 15);
const fresh = arg('--fresh', smoke ? 1 : 5);
const WINDOW = 32_000;
/** Empty requests per run, for workerd's own cost of a request. */
const EMPTY = 3;

const all = traces();
if (all.length === 0) {
  console.error('worker-turn: no corpus (../shared/corpus); nothing to measure');
  process.exit(1);
}
if (!existsSync(join(root, 'dist', 'entrypoints', 'workerd.js'))) {
  console.error("worker-turn: dist/ is not built; run 'npm run build' first");
  process.exit(1);
}

const largest = largestTrace(all);

// The saved states, made in Node: for each run and case, the session store's entry and every
// value of the offload store (the state's pages, and the originals a pass offloaded).
const { AutoContextMemory } = await import(ourEntry('default'));
const { MemoryStore, MemorySessionStore } = await import(pathToFileURL(join(root, 'dist', 'stores', 'memory.js')).href);
/**
 * The trace's messages in groups as a Worker gets them, one request each: a message, or an
 * assistant message with the tool results that answer it.
 */
function groups(messages) {
  const out = [];
  for (const m of messages) {
    if (m.role === 'tool' && out.length > 0) out.at(-1).push(m);
    else out.push([m]);
  }
  return out;
}

/**
 * A session of the trace as a Worker keeps it: each group added, then `compressIfNeeded()`.
 * With `upTo`, stops before group `upTo` and returns the memory and its stores; without it,
 * returns which groups triggered a pass.
 */
async function replay(messages, sessionId, upTo) {
  const store = new MemoryStore();
  const memory = new AutoContextMemory({ maxToken: WINDOW, store, sessionId });
  const triggered = [];
  const list = groups(messages);
  for (const [i, group] of list.entries()) {
    if (i === upTo) break;
    memory.add(group);
    triggered.push((await memory.compressIfNeeded()).compressed);
  }
  return { memory, store, triggered, list };
}

const CASES = ['whole trace', 'pass', 'no pass', 'no pass, read before'];
/**
 * The saved state of `run` for a case, and the group its turn adds: `whole trace` holds every
 * message but the last, never compressed; `pass` and `no pass` are the session replayed up to
 * the last group whose turn triggered a pass, or the last that did not.
 */
async function savedState(kind, run) {
  const messages = unseen(largest.messages, run);
  const sessionId = `turn-${CASES.indexOf(kind)}-${run}`;
  let memory;
  let store;
  let next;
  let prev;
  if (kind === 'whole trace') {
    store = new MemoryStore();
    memory = new AutoContextMemory({ maxToken: WINDOW, store, sessionId });
    memory.add(messages.slice(0, -1));
    next = messages.at(-1);
  } else if (kind === 'no pass, read before') {
    // The last two groups in a row whose turns compressed nothing: the state before the first,
    // whose turn the isolate runs (not measured) before the measured one.
    const { triggered, list } = await replay(messages, sessionId);
    const at = triggered.findLastIndex((t, i) => !t && i > 0 && !triggered[i - 1]);
    ({ memory, store } = await replay(messages, sessionId, at - 1));
    prev = list[at - 1];
    next = list[at];
  } else {
    const { triggered, list } = await replay(messages, sessionId);
    const at = triggered.findLastIndex((t) => t === (kind === 'pass'));
    ({ memory, store } = await replay(messages, sessionId, at));
    next = list[at];
  }
  const sessions = new MemorySessionStore();
  await memory.save(sessions);
  const offloads = [];
  for (const key of store.keys()) offloads.push([key, await store.get(key)]);
  return { sessionId, saved: await sessions.load(sessionId), offloads, prev, next, tokens: memory.tokenCount() };
}

/**
 * The session's previous request, run (not measured) where the measured turn then runs: load,
 * add `group`, compress if needed, take the messages, save. Its source goes into the Worker too.
 */
async function previousTurn(AutoContextMemory, sessions, sessionId, store, group) {
  const memory = await AutoContextMemory.load(sessions, sessionId, { store });
  memory.add(group);
  await memory.compressIfNeeded();
  memory.messages();
  await memory.save(sessions);
  memory.dispose();
}

const work = join(root, 'target', 'bench', `worker-turn-${process.pid}`);
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
// The Worker: holds the saved states it is sent, fills a run's stores from one (not measured),
// then runs the turn on them (measured). 'autocontext' resolves to this checkout's dist/ as a
// Worker build resolves it.
const entry = join(work, 'entry.js');
writeFileSync(
  entry,
  `import { AutoContextMemory } from 'autocontext';
import { MemorySessionStore, MemoryStore } from 'autocontext/stores/memory';
const states = new Map();
const ready = new Map();
${previousTurn}
export default {
  async fetch(request) {
    const [, op, key] = new URL(request.url).pathname.split('/');
    if (op === 'state') {
      states.set(key, await request.json());
      return new Response('ok');
    }
    if (op === 'fill') {
      const s = states.get(key);
      const store = new MemoryStore();
      for (const [k, v] of s.offloads) await store.put(k, v);
      const sessions = new MemorySessionStore();
      await sessions.save(s.sessionId, s.saved);
      // The session's previous request, in this isolate.
      if (s.prev !== undefined) await previousTurn(AutoContextMemory, sessions, s.sessionId, store, s.prev);
      ready.set(key, { store, sessions, sessionId: s.sessionId, next: s.next });
      return new Response('ok');
    }
    if (op === 'turn') {
      const { store, sessions, sessionId, next } = ready.get(key);
      ready.delete(key);
      const memory = await AutoContextMemory.load(sessions, sessionId, { store });
      memory.add(next);
      const result = await memory.compressIfNeeded();
      const messages = memory.messages();
      const revision = await memory.save(sessions);
      memory.dispose();
      return Response.json({ compressed: result.compressed, tokensBefore: result.tokensBefore, tokensAfter: result.tokensAfter, messages: messages.length, revision });
    }
    return Response.json({});
  },
};
`,
);
const bundleDir = join(work, 'bundle');
await bundleWorker(entry, bundleDir, [checkoutPackage(root)]);
const options = { ...moduleOptions(bundleDir), compatibilityDate: '2026-07-01' };

/** A running workerd: `request(path, body?)` answers JSON or text; `cpu(path)` measures one request. */
async function start() {
  const mf = new Miniflare(options);
  const url = await mf.ready;
  const pid = workerdPid();
  const request = async (path, body) => {
    const response = await mf.dispatchFetch(new URL(path, url), body === undefined ? {} : { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${path}: ${response.status} ${text}`);
    return text.startsWith('{') ? JSON.parse(text) : text;
  };
  const cpu = async (path) => {
    const before = threadCpuNs(pid);
    const answer = await request(path);
    return { answer, ...cpuBetween(before, threadCpuNs(pid)) };
  };
  return { mf, request, cpu };
}

/** A turn's CPU with workerd's own cost of a request (the median of empty ones) taken off. */
function net(turn, empties) {
  return { threadMs: turn.threadMs - median(empties.map((e) => e.threadMs)), totalMs: turn.totalMs - median(empties.map((e) => e.totalMs)) };
}

const results = { trace: largest.name, messages: largest.messages.length, window: WINDOW, runs, cases: [], fresh: null };

/** The states of each case, the first for a turn not measured: measured in Node afterwards. */
const made = {};

// Warm isolate: one workerd for every run of every case, after a turn of each that is not
// measured (the vocabulary decoded, the engine's code compiled).
{
  const w = await start();
  for (const [i, kind] of CASES.entries()) {
    await w.request(`/state/warm${i}`, await savedState(kind, runs + 1 + i));
    await w.request(`/fill/warm${i}`);
    await w.request(`/turn/warm${i}`);
  }
  for (const kind of CASES) {
    const rows = [];
    made[kind] = [await savedState(kind, runs + 1 + CASES.indexOf(kind))];
    for (let run = 0; run < runs; run++) {
      const key = `${CASES.indexOf(kind)}-${run}`;
      const state = await savedState(kind, run);
      made[kind].push(state);
      await w.request(`/state/${key}`, state);
      await w.request(`/fill/${key}`);
      const empties = [];
      for (let i = 0; i < EMPTY; i++) empties.push(await w.cpu('/empty'));
      const turn = await w.cpu(`/turn/${key}`);
      if (turn.answer.compressed !== !kind.startsWith('no pass')) throw new Error(`${kind}: the turn ${turn.answer.compressed ? 'compressed' : 'did not compress'}`);
      rows.push({ ...net(turn, empties), savedTokens: state.tokens, added: Array.isArray(state.next) ? state.next.length : 1, grossThreadMs: turn.threadMs, grossTotalMs: turn.totalMs, emptyThreadMs: median(empties.map((e) => e.threadMs)), ...turn.answer });
    }
    const pick = (k) => median(rows.map((r) => r[k]));
    const first = rows[0];
    results.cases.push({
      kind,
      threadMs: pick('threadMs'),
      totalMs: pick('totalMs'),
      threadMaxMs: Math.max(...rows.map((r) => r.threadMs)),
      emptyThreadMs: pick('emptyThreadMs'),
      threadRuns: rows.map((r) => +r.threadMs.toFixed(2)),
      savedTokens: first.savedTokens,
      added: first.added,
      tokensBefore: first.tokensBefore,
      tokensAfter: first.tokensAfter,
      messages: first.messages,
    });
  }
  await w.mf.dispose();
}

// A fresh isolate's first turn (no pass): workerd restarted for each.
{
  const rows = [];
  const state = await savedState('no pass', 0);
  for (let i = 0; i < fresh; i++) {
    const w = await start();
    await w.request('/state/first', state);
    await w.request('/fill/first');
    const empties = [];
    for (let k = 0; k < EMPTY; k++) empties.push(await w.cpu('/empty'));
    const turn = await w.cpu('/turn/first');
    rows.push(net(turn, empties));
    await w.mf.dispose();
  }
  results.fresh = { runs: fresh, threadMs: median(rows.map((r) => r.threadMs)), totalMs: median(rows.map((r) => r.totalMs)) };
}
// The same turns in Node, in a child process that has met none of the texts.
{
  const file = join(work, 'states.json');
  writeFileSync(file, JSON.stringify(made));
  const child = spawnSync(process.execPath, [new URL(import.meta.url).pathname, '--node', file], { cwd: root, maxBuffer: 1 << 26, stdio: ['ignore', 'pipe', 2] });
  if (child.status !== 0) throw new Error(`the Node turns failed (${child.status ?? child.signal})`);
  results.node = JSON.parse(child.stdout.toString());
}
rmSync(work, { recursive: true, force: true });

const f1 = (x) => x.toFixed(1);
console.log(`Worker turn in workerd, ${results.trace} (${results.messages} messages), ${WINDOW}-token window; CPU ms per request, median of ${runs}`);
console.log('case        | isolate thread | all threads | saved tokens | messages added | tokens before -> after');
for (const c of results.cases) {
  console.log(
    `${c.kind.padEnd(11)} | ${f1(c.threadMs).padStart(14)} | ${f1(c.totalMs).padStart(11)} | ${String(c.savedTokens).padStart(12)} | ${String(c.added).padStart(14)} | ${c.tokensBefore} -> ${c.tokensAfter}`,
  );
}
for (const c of results.node) {
  console.log(`${c.kind.padEnd(11)} in Node: ${f1(c.ms)} ms CPU (${c.phases.map((p) => `${p.phase} ${f1(p.ms)}`).join(', ')})`);
}
console.log(`first turn of a fresh isolate (no pass), median of ${fresh}: ${f1(results.fresh.threadMs)} ms isolate thread, ${f1(results.fresh.totalMs)} ms all threads`);
mkdirSync(join(root, 'target', 'bench'), { recursive: true });
writeFileSync(join(root, 'target', 'bench', 'worker-turn.json'), JSON.stringify(results, null, 2));

/**
 * The turns of `made` (each case's states, the first one's turn not measured) in this process:
 * CPU ms of each phase, medians.
 */
async function nodeTurns(made) {
  const { AutoContextMemory } = await import(ourEntry('default'));
  const { MemoryStore, MemorySessionStore } = await import(pathToFileURL(join(root, 'dist', 'stores', 'memory.js')).href);
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const phases = ['load', 'add', 'compressIfNeeded', 'messages', 'save', 'dispose'];
  const out = [];
  for (const [kind, states] of Object.entries(made)) {
    const rows = [];
    for (const s of states) {
      const store = new MemoryStore();
      for (const [k, v] of s.offloads) await store.put(k, v);
      const sessions = new MemorySessionStore();
      await sessions.save(s.sessionId, s.saved);
      if (s.prev !== undefined) await previousTurn(AutoContextMemory, sessions, s.sessionId, store, s.prev);
      const t = [];
      let at = cpu();
      const lap = () => {
        const now = cpu();
        t.push(now - at);
        at = now;
      };
      const memory = await AutoContextMemory.load(sessions, s.sessionId, { store });
      lap();
      memory.add(s.next);
      lap();
      await memory.compressIfNeeded();
      lap();
      memory.messages();
      lap();
      await memory.save(sessions);
      lap();
      memory.dispose();
      await undefined; // the engine is freed in a microtask once dispose() returns
      lap();
      rows.push(t);
    }
    rows.shift();
    out.push({
      kind,
      ms: median(rows.map((r) => r.reduce((a, b) => a + b, 0))),
      phases: phases.map((phase, i) => ({ phase, ms: median(rows.map((r) => r[i])) })),
    });
  }
  return out;
}
