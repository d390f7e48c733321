// The cost benchmark: replays every trace of the shared corpus and traces-extra as an agent loop
// against each system (autocontext's presets, the peers, the baselines) and accounts what each
// request costs, with and without a provider's prompt cache (js/accounting.js, shared with the command line). Each
// system runs in a fresh Node process of its own, so its CPU figure and its garbage are its own.
//
//   node bench/cost.mjs [--systems a,b] [--traces part,part] [--window n] [--provider p] [--json file] [--md file] [--jobs n]
//
//   --systems   system ids (default: all; an unknown id lists the known ones)
//   --traces    keep traces whose name contains one of these parts (default: all 30)
//   --window    the model's window in tokens (default 32000); every system compresses at 75% of it
//   --provider  whose prices autocontext's systems are told, `anthropic` (default) or `openai`
//               (the ledger prices every request both ways; a peer knows no prices)
//   --json      where the results go (default target/bench/cost.json): `systems[]`, each with
//               `totals` and `traces[]`; per trace every figure of the report (turns, plain,
//               anthropic, openai, cachedTokens, rewrites, overWindow, invalid, empty,
//               newestDropped, newestAltered, summarizer*, originals, recoverable, cpuMs,
//               counterCpuMs, passes, medianFreed, firstChanged), `turnList` (per turn:
//               [request tokens, cached prefix tokens, messages sent, first changed index or
//               null]) and `passList` (per pass of a system that reports them: the turn, tokens
//               before and after and freed, events, the first event's index and step types)
//   --md        also write the report's markdown there (it is printed either way)
//   --jobs      systems replayed at once (default 1: the machine is shared, and CPU time is
//               measured per process anyway)
//   --reuse     an earlier results file (this command's JSON, or npm run bench's
//               target/bench/results.json): every system not picked by --systems is taken from
//               it (on the same traces) instead of being replayed again, so the targets and the
//               ratios against the peers come with a run of one preset
//
// AUTOCONTEXT_BENCH_OPTIONS (JSON) adds options to every autocontext system, for trying a
// setting on the whole corpus: `AUTOCONTEXT_BENCH_OPTIONS='{"toolResultLimit": 3000}'`.
//
// Examples: `node bench/cost.mjs --systems default,langchain-summarization-4k --traces astroid`;
// after `npm run bench`, `node bench/cost.mjs --systems default --reuse target/bench/results.json`.
// Needs `npm run build` first (it imports the package from dist/).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');

export const WINDOW = 32_000;
export const RATIO = 0.75;
/** The windows `npm run bench` replays every system at: a small one, and the ones Claude and GPT users run. */
export const WINDOWS = [32_000, 128_000, 200_000];
/** Whose prices autocontext's systems can be told (js/accounting.js prices both). */
export const PROVIDERS = ['anthropic', 'openai'];

function parseArgs(argv) {
  const out = { systems: [], traces: [], json: join(root, 'target', 'bench', 'cost.json'), md: null, jobs: 1, child: null, reuse: null, window: WINDOW, provider: 'anthropic' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const list = () => argv[++i].split(',').map((s) => s.trim()).filter(Boolean);
    if (a === '--systems') out.systems.push(...list());
    else if (a === '--traces') out.traces.push(...list());
    else if (a === '--json') out.json = argv[++i];
    else if (a === '--md') out.md = argv[++i];
    else if (a === '--jobs') out.jobs = Math.max(1, Number(argv[++i]));
    else if (a === '--child') out.child = argv[++i];
    else if (a === '--reuse') out.reuse = argv[++i];
    else if (a === '--window') out.window = Number(argv[++i]);
    else if (a === '--provider') out.provider = argv[++i];
    else throw new Error(`cost: unknown argument ${a}`);
  }
  if (!(Number.isInteger(out.window) && out.window > 0)) throw new Error(`cost: --window must be a positive integer, got ${out.window}`);
  if (!PROVIDERS.includes(out.provider)) throw new Error(`cost: --provider must be ${PROVIDERS.join(' or ')}, got ${out.provider}`);
  return out;
}

function packageVersion(name) {
  if (name === 'autocontext') return JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
  return JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;
}

export const PEER_PACKAGES = ['langchain', '@langchain/core', '@mastra/core', '@strands-agents/sdk', 'gpt-tokenizer'];

/** One system over the traces, in this process; prints its JSON result. */
async function runChild(systemId, traceFilters, window, provider) {
  const { costTraces } = await import('./cost/traces.mjs');
  const { pickSystems } = await import('./cost/systems/index.mjs');
  const { replayTrace, sumTraces } = await import('./cost/replay.mjs');
  const { ourEntry } = await import('./counters.mjs');
  const autocontext = await import(ourEntry('default'));
  const { countTokens } = await import('gpt-tokenizer/encoding/o200k_base');
  const ordinary = { disallowedSpecial: new Set() };
  const countText = (text) => (text.length === 0 ? 0 : countTokens(text, ordinary));
  const validate = (request) => autocontext.validate(request, 'openai');
  const [system] = await pickSystems([systemId]);
  const rows = [];
  for (const trace of costTraces(traceFilters)) {
    rows.push(await replayTrace(system, trace, { lib: { autocontext }, window, ratio: RATIO, provider, countText, peerCountText: countText, validate }));
  }
  const { start, ...described } = system;
  process.stdout.write(JSON.stringify({ ...described, totals: sumTraces(rows), traces: rows }));
}

function runInChild(systemId, traceFilters, window, provider) {
  return new Promise((resolve, reject) => {
    const args = [fileURLToPath(import.meta.url), '--child', systemId, '--window', String(window), '--provider', provider];
    if (traceFilters.length > 0) args.push('--traces', traceFilters.join(','));
    const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`cost: ${systemId} failed (${code}):\n${Buffer.concat(err).toString()}`));
      else resolve(JSON.parse(Buffer.concat(out).toString()));
    });
  });
}

/**
 * The systems of an earlier results object that this run does not replay, on this run's traces
 * (a system that lacks one of them is left out), with their totals summed again.
 */
async function reusedSystems(previous, skip, traceNames) {
  const { sumTraces } = await import('./cost/replay.mjs');
  const out = [];
  for (const s of previous.systems) {
    if (skip.has(s.id)) continue;
    const rows = traceNames.map((name) => s.traces.find((t) => t.trace === name));
    if (rows.some((x) => x === undefined)) continue;
    out.push({ ...s, traces: rows, totals: sumTraces(rows), reused: s.reused ?? previous.machine.date });
  }
  return out;
}

/** Runs the selected systems (each in a child process) and returns the results object. */
export async function runCost({ systems = [], traces = [], jobs = 1, reuse = null, window = WINDOW, provider = 'anthropic', log = () => {} } = {}) {
  const { SYSTEM_IDS } = await import('./cost/systems/index.mjs');
  const { costTraces } = await import('./cost/traces.mjs');
  for (const id of systems) {
    if (!SYSTEM_IDS.includes(id)) throw new Error(`cost: unknown system ${JSON.stringify(id)}; known: ${SYSTEM_IDS.join(', ')}`);
  }
  const picked = (systems.length === 0 ? SYSTEM_IDS : SYSTEM_IDS.filter((id) => systems.includes(id))).map((id) => ({ id }));
  const selected = costTraces(traces);
  if (selected.length === 0) throw new Error(`cost: no trace matches ${JSON.stringify(traces)} (is ../shared there?)`);
  const started = Date.now();
  const machine = {
    date: new Date(started).toISOString(),
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: totalmem() / 2 ** 30,
    os: `${platform()} ${release()}`,
    node: process.version,
    loadStart: loadavg(),
  };
  const results = new Array(picked.length);
  let next = 0;
  const worker = async () => {
    while (next < picked.length) {
      const i = next++;
      const t = Date.now();
      results[i] = await runInChild(picked[i].id, traces, window, provider);
      log(`${picked[i].id}: ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, picked.length) }, worker));
  machine.loadEnd = loadavg();
  machine.seconds = (Date.now() - started) / 1000;
  if (reuse !== null) {
    const saved = JSON.parse(readFileSync(reuse, 'utf8'));
    // npm run bench's results.json holds a run per window and provider under `costWindows`.
    const previous = saved.costWindows?.find((w) => w.window === window)?.[provider] ?? saved.cost ?? saved;
    if (previous.settings?.window !== window) throw new Error(`cost: ${reuse} holds no run at window ${window}`);
    const taken = await reusedSystems(previous, new Set(picked.map((p) => p.id)), selected.map((t) => t.name));
    log(`reused from ${reuse}: ${taken.map((x) => x.id).join(', ') || 'nothing (no system there covers these traces)'}`);
    results.push(...taken);
    results.sort((a, b) => SYSTEM_IDS.indexOf(a.id) - SYSTEM_IDS.indexOf(b.id));
  }
  return {
    machine,
    settings: { window, provider, ratio: RATIO, trigger: Math.floor(window * RATIO), traceFilters: traces, traces: selected.map((t) => t.name) },
    versions: Object.fromEntries(['autocontext', ...PEER_PACKAGES].map((p) => [p, packageVersion(p)])),
    systems: results,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = parseArgs(process.argv.slice(2));
  if (args.child !== null) {
    await runChild(args.child, args.traces, args.window, args.provider);
  } else {
    if (!existsSync(join(root, 'dist', 'entrypoints', 'node.js'))) {
      console.error("cost: dist/ is not built; run 'npm run build' first");
      process.exit(1);
    }
    const results = await runCost({ systems: args.systems, traces: args.traces, jobs: args.jobs, reuse: args.reuse, window: args.window, provider: args.provider, log: (...a) => console.error('cost:', ...a) });
    mkdirSync(dirname(args.json), { recursive: true });
    writeFileSync(args.json, JSON.stringify(results));
    const { costReport } = await import('./cost/report.mjs');
    const md = costReport(results, { level: 1, perTrace: results.systems.filter((x) => x.family === 'autocontext').map((x) => x.id) });
    if (args.md) writeFileSync(args.md, md);
    process.stdout.write(md + '\n');
    console.error(`cost: wrote ${args.json} in ${results.machine.seconds.toFixed(0)} s`);
  }
}
