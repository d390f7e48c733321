// The benchmark suite (`npm run bench`): every measurement in one run, each counter and each
// engine benchmark in fresh Node processes, the session cost of every system (bench/cost.mjs),
// a long session in the engine and in the example Worker (bench/long-session*.mjs), then
// one Worker turn in workerd (bench/worker-turn.mjs), then docs/benchmarks.md (bench/report.mjs).
//
//   node bench/run.mjs [--smoke] [--out <file.md>] [--native <cargo-bench.json>] [--build-seconds <s>]
//   node bench/run.mjs --from target/bench/results.json [--out <file.md>]
//
// --smoke runs every step on a few texts with one round and writes target/benchmarks-smoke.md:
// it checks that the suite works, not how fast anything is. Needs `npm run build` first.
// --from writes the report again from the results a run saved, measuring nothing (for a
// change to the report's wording).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { cpus, freemem, loadavg, platform, release, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import { COUNTERS, ENCODINGS, EXACT, REFERENCE, version } from './counters.mjs';
import { benchTexts, corpusDir, median, root, traces } from './texts.mjs';
import { report } from './report.mjs';
import { PEER_PACKAGES, PROVIDERS, WINDOWS, runCost } from './cost.mjs';
import { costChart } from './cost/chart.mjs';
import { wasmBreakdown } from './wasm-size.mjs';

const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const option = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const smoke = flag('--smoke');
const out = option('--out') ?? (smoke ? join(root, 'target', 'benchmarks-smoke.md') : join(root, 'docs', 'benchmarks.md'));
const nativeFile = option('--native') ?? join(root, 'target', 'bench-native.json');
const work = join(root, 'target', 'bench');
mkdirSync(work, { recursive: true });

if (option('--from') !== undefined) {
  writeFileSync(out, report(JSON.parse(readFileSync(option('--from'), 'utf8'))));
  console.error(`bench: wrote ${out} from ${option('--from')}`);
  process.exit(0);
}

for (const build of ['dist', 'dist/full', 'dist/lite']) {
  if (!existsSync(join(root, build, 'wasm', 'autocontext_bg.wasm'))) {
    console.error(`bench: ${build} is not built; run 'npm run build' first`);
    process.exit(1);
  }
}

if (traces().length === 0) {
  console.error(`bench: no corpus at ${corpusDir()} (set AUTOCONTEXT_CORPUS to the folder of agent traces)`);
  process.exit(1);
}

const log = (...a) => console.error('bench:', ...a);

/** Runs a bench child in a fresh Node process and parses its JSON answer. */
function child(script, childArgs, timeoutMs = 30 * 60_000, nodeFlags = []) {
  const r = spawnSync(process.execPath, [...nodeFlags, join(root, 'bench', script), ...childArgs.map(String)], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    timeout: timeoutMs,
  });
  if (r.status !== 0) throw new Error(`${script} ${childArgs.join(' ')} failed (${r.status ?? r.signal}):\n${r.stderr}`);
  return JSON.parse(r.stdout);
}

const started = new Date();
const machine = {
  date: started.toISOString(),
  cpu: cpus()[0]?.model ?? 'unknown',
  cores: cpus().length,
  memoryGiB: totalmem() / 2 ** 30,
  freeGiB: freemem() / 2 ** 30,
  os: `${platform()} ${release()}`,
  node: process.version,
  rustc: spawnSync('rustc', ['--version'], { encoding: 'utf8' }).stdout?.trim() ?? 'unknown',
  loadStart: loadavg(),
  versions: Object.fromEntries([...new Set(['gpt-tokenizer', 'js-tiktoken', 'tiktoken', '@langchain/core', ...PEER_PACKAGES, 'autocontext'])].map((p) => [p, version(p)])),
  smoke,
  buildSeconds: option('--build-seconds') === undefined ? undefined : Number(option('--build-seconds')),
};

// The texts, written once for every child.
const texts = benchTexts(smoke ? { perKind: 3_000, corpusLimit: 40_000 } : {});
const textsFile = join(work, 'texts.json');
writeFileSync(textsFile, JSON.stringify(texts));
log(`${texts.length} texts, ${(texts.reduce((n, t) => n + t.bytes, 0) / 1e6).toFixed(2)} MB`);

// Throughput and counts, one fresh process per counter and encoding, in two sweeps (the second
// in the opposite order); each counter keeps the faster of its two processes. A shared machine
// has slow spells of a minute or more, and a process that ran through one would otherwise stand
// for its counter alone.
const jobs = [];
for (const encoding of ENCODINGS) {
  for (const counter of COUNTERS) {
    if (counter === 'autocontext/lite' && encoding !== ENCODINGS[0]) continue; // the estimator has no encoding
    jobs.push({ counter, encoding, rounds: smoke ? 1 : counter === 'js-tiktoken' ? 3 : 5 });
  }
}
const sweeps = smoke ? 1 : 2;
const runs = new Map();
for (let sweep = 0; sweep < sweeps; sweep++) {
  for (const { counter, encoding, rounds } of sweep % 2 ? [...jobs].reverse() : jobs) {
    log(`throughput ${counter} ${encoding} (${rounds} rounds, sweep ${sweep + 1} of ${sweeps})`);
    const key = `${counter} ${encoding}`;
    runs.set(key, [...(runs.get(key) ?? []), child('child-throughput.mjs', [counter, encoding, textsFile, rounds])]);
  }
}
/** CPU seconds of a run's later rounds (its first round when it has one), summed over its groups. */
const laterCpu = (run) => run.groups.reduce((s, g) => s + median(g.cpuSeconds.length > 1 ? g.cpuSeconds.slice(1) : g.cpuSeconds), 0);
const throughput = jobs.map(({ counter, encoding }) => {
  const mine = runs.get(`${counter} ${encoding}`);
  for (const r of mine.slice(1)) {
    if (r.counts.some((n, i) => n !== mine[0].counts[i])) throw new Error(`${counter} ${encoding} counted differently in two processes`);
  }
  const best = mine.reduce((a, b) => (laterCpu(b) < laterCpu(a) ? b : a));
  return { ...best, processes: mine.length, maxRssKb: Math.max(...mine.map((r) => r.maxRssKb)) };
});
// Peak memory is reported over a process that only holds the same texts.
const baselineRssKb = JSON.parse(
  spawnSync(process.execPath, ['-e', `JSON.parse(require('fs').readFileSync(${JSON.stringify(textsFile)}, 'utf8')); console.log(process.resourceUsage().maxRSS)`], { encoding: 'utf8' }).stdout,
);

// Exactness against the reference, text by text.
const exactness = [];
for (const encoding of ENCODINGS) {
  const reference = throughput.find((r) => r.counter === REFERENCE && r.encoding === encoding).counts;
  for (const r of throughput.filter((x) => x.encoding === encoding && EXACT.has(x.counter) && x.counter !== REFERENCE)) {
    const bad = [];
    r.counts.forEach((n, i) => {
      if (n !== reference[i]) bad.push({ kind: texts[i].kind, bucket: texts[i].bucket, bytes: texts[i].bytes, got: n, want: reference[i], sample: texts[i].text.slice(0, 60) });
    });
    exactness.push({ counter: r.counter, encoding, texts: r.counts.length, mismatches: bad.length, examples: bad.slice(0, 3) });
  }
}
for (const r of throughput) delete r.counts;

// Cold start: module load and first count, fresh processes. The processes go round the
// counters (each counter's first, then each one's second, ...), so that a slow spell of the
// shared machine falls on every counter alike rather than on the one measured during it.
const cold = [];
const coldCases = ENCODINGS.flatMap((encoding) => COUNTERS.filter((counter) => counter !== 'autocontext/lite' || encoding === ENCODINGS[0]).map((counter) => ({ counter, encoding, runs: [] })));
for (let round = 0; round < (smoke ? 1 : 7); round++) {
  for (const c of coldCases) c.runs.push(child('child-cold.mjs', [c.counter, c.encoding], 120_000));
}
for (const { counter, encoding, runs } of coldCases) {
  const pick = (f) => median(runs.map(f));
  cold.push({
    counter,
    encoding,
    loadMs: pick((r) => r.loadMs),
    firstCountMs: pick((r) => r.firstCountMs),
    totalMs: pick((r) => r.loadMs + r.firstCountMs),
    loadCpuMs: pick((r) => r.loadCpuMs),
    firstCountCpuMs: pick((r) => r.firstCountCpuMs),
    totalCpuMs: pick((r) => r.loadCpuMs + r.firstCountCpuMs),
  });
  log(`cold ${counter} ${encoding}: ${cold.at(-1).totalMs.toFixed(1)} ms wall, ${cold.at(-1).totalCpuMs.toFixed(1)} ms CPU`);
}

// Adversarial long words.
const adversarial = [];
const sizes = smoke ? [1_000] : [1_000, 10_000, 50_000, 200_000];
for (const encoding of ENCODINGS) {
  for (const counter of COUNTERS.filter((c) => EXACT.has(c))) {
    log(`adversarial ${counter} ${encoding}`);
    adversarial.push(child('child-adversarial.mjs', [counter, encoding, 2_000, ...sizes]));
  }
}

// Sizes of the three builds: the .wasm and the JavaScript a bundler ships with it.
const sizesOut = [];
for (const [name, dir] of [['autocontext (o200k_base)', 'dist'], ['autocontext/full (o200k_base + cl100k_base)', 'dist/full'], ['autocontext/lite (estimator)', 'dist/lite']]) {
  const wasm = readFileSync(join(root, dir, 'wasm', 'autocontext_bg.wasm'));
  const bundle = await esbuild.build({
    entryPoints: [join(root, dir, 'entrypoints', 'workerd.js')],
    bundle: true,
    write: false,
    minify: true,
    format: 'esm',
    platform: 'neutral',
    external: ['*.wasm'],
    logLevel: 'silent',
  });
  const js = Buffer.concat(bundle.outputFiles.map((f) => Buffer.from(f.contents)));
  sizesOut.push({ name, ...sizeOf(wasm, 'wasm'), ...sizeOf(js, 'js') });
}
function sizeOf(buf, prefix) {
  return {
    [`${prefix}Raw`]: buf.length,
    [`${prefix}Gzip`]: gzipSync(buf, { level: 9 }).length,
    [`${prefix}Brotli`]: brotliCompressSync(buf, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
  };
}

// Each vocabulary as the packages ship it, gzip: ours is the build script's encoding, embedded
// in the .wasm (read from the build's output folder); gpt-tokenizer's and js-tiktoken's are
// JavaScript modules.
const vocabSizes = [];
const buildOut = join(process.env.CARGO_TARGET_DIR ?? join(root, 'target'), 'wasm32-unknown-unknown', 'release', 'build');
for (const encoding of ENCODINGS) {
  const ours = existsSync(buildOut)
    ? readdirSync(buildOut)
        .filter((d) => d.startsWith('autocontext-'))
        .map((d) => join(buildOut, d, 'out', `${encoding}.vocab`))
        .filter((f) => existsSync(f))
        .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]
    : undefined;
  const gzipOf = (file) => (file && existsSync(file) ? gzipSync(readFileSync(file), { level: 9 }).length : null);
  vocabSizes.push({
    encoding,
    ours: gzipOf(ours),
    'gpt-tokenizer': gzipOf(join(root, 'node_modules', 'gpt-tokenizer', 'esm', 'bpeRanks', `${encoding}.js`)),
    'js-tiktoken': gzipOf(join(root, 'node_modules', 'js-tiktoken', 'dist', 'ranks', `${encoding}.js`)),
  });
}

// What the estimator-only build is made of (the linker's output still has its symbol names).
const liteLinked = join(process.env.CARGO_TARGET_DIR ?? join(root, 'target'), 'wasm32-unknown-unknown', 'lite', 'autocontext.wasm');
const liteBreakdown = existsSync(liteLinked) ? wasmBreakdown(liteLinked) : null;

// The engine: growth, one pass, compress() against trimMessages.
const engine = {};
for (const section of ['growth', 'pass', 'compress', 'trim']) {
  log(`engine: ${section}`);
  engine[section] = child('child-engine.mjs', [section, ...(smoke ? [2, '--quick'] : [7])], 30 * 60_000, ['--expose-gc']);
}
engine.trim = engine.compress.map((ours, i) => {
  const theirs = engine.trim[i];
  return { trace: ours.trace, messages: ours.messages, oursMs: ours.ms, oursFirstMs: ours.firstMs, trimMs: theirs.ms, trimFirstMs: theirs.firstMs, kept: ours.kept, trimmed: theirs.kept };
});
delete engine.compress;

// What a session costs: every system over every trace (bench/cost.mjs), each in its own process.
// The smoke run replays two short traces, enough to see every system work.
// Then the same at every window of WINDOWS, and autocontext's systems again told OpenAI's
// prices (a peer's requests do not depend on them), each window's picture beside the report
// (docs/ for a full run, target/ for a smoke run, which must not overwrite the published ones).
log('cost: every system over the traces');
const costTraces = smoke ? ['tau-bench-gpt4o-airline-task4', 'pydantic-ai-claude-parallel'] : [];
const cost = await runCost({ traces: costTraces, log: (...a) => log('cost:', ...a) }); // one at a time: its CPU figures are compared
const { AUTOCONTEXT_SYSTEMS } = await import('./cost/systems/autocontext.mjs');
const costWindows = [];
for (const window of WINDOWS) {
  const byProvider = {};
  for (const provider of PROVIDERS) {
    if (window === cost.settings.window && provider === cost.settings.provider) {
      byProvider[provider] = cost;
      continue;
    }
    log(`cost: window ${window}, ${provider} prices`);
    const systems = provider === 'anthropic' ? [] : AUTOCONTEXT_SYSTEMS.map((x) => x.id);
    byProvider[provider] = await runCost({ traces: costTraces, systems, window, provider, jobs: 2, log: (...a) => log('cost:', ...a) });
  }
  costWindows.push({ window, ...byProvider });
  writeFileSync(join(dirname(out), `cost-${window / 1000}k.svg`), costChart(byProvider.anthropic));
}

// A long session, 100,000 messages of the corpus back to back: the engine alone in Node
// (bench/long-session.mjs), and the example Worker's Durable Object in workerd
// (bench/long-session-worker.mjs). Each prints its table here and saves its rows.
const longMessages = smoke ? 1_000 : 100_000;
const long = {};
for (const [key, script, nodeFlags] of [
  ['session', 'long-session.mjs', ['--expose-gc']],
  ['worker', 'long-session-worker.mjs', []],
]) {
  log(`long session: ${script}, ${longMessages} messages`);
  const r = spawnSync(process.execPath, [...nodeFlags, join(root, 'bench', script), '--messages', String(longMessages)], { cwd: root, stdio: ['ignore', 2, 2], timeout: 3 * 3600_000 });
  if (r.status !== 0) throw new Error(`${script} failed (${r.status ?? r.signal})`);
  long[key] = JSON.parse(readFileSync(join(work, script.replace(/\.mjs$/, '.json')), 'utf8'));
}

// One Worker turn in workerd (bench/worker-turn.mjs): restore, add, compress, messages, save;
// CPU per request, with a pass and without.
log('worker turn: bench/worker-turn.mjs');
{
  const r = spawnSync(process.execPath, [join(root, 'bench', 'worker-turn.mjs'), ...(smoke ? ['--smoke'] : [])], { cwd: root, stdio: ['ignore', 2, 2], timeout: 3600_000 });
  if (r.status !== 0) throw new Error(`worker-turn.mjs failed (${r.status ?? r.signal})`);
}
const workerTurn = JSON.parse(readFileSync(join(work, 'worker-turn.json'), 'utf8'));

const native = existsSync(nativeFile) ? JSON.parse(readFileSync(nativeFile, 'utf8')) : null;
const nativePassFile = join(root, 'target', 'bench-pass-native.json');
const nativePass = existsSync(nativePassFile) ? JSON.parse(readFileSync(nativePassFile, 'utf8')) : null;
const nativeTurnFile = join(root, 'target', 'bench-turn-native.json');
if (existsSync(nativeTurnFile)) workerTurn.native = JSON.parse(readFileSync(nativeTurnFile, 'utf8'));
machine.loadEnd = loadavg();
machine.seconds = (Date.now() - started.getTime()) / 1000;

const results = { machine, throughput, exactness, cold, baselineRssKb, adversarial, sizes: sizesOut, vocabSizes, liteBreakdown, engine, native, nativePass, cost, costWindows, long, workerTurn };
writeFileSync(join(work, 'results.json'), JSON.stringify(results, null, 2));
mkdirSync(join(out, '..'), { recursive: true });
writeFileSync(out, report(results));
log(`wrote ${out} in ${machine.seconds.toFixed(0)} s`);
const ours = exactness.filter((e) => e.counter === 'autocontext');
if (ours.some((e) => e.mismatches > 0)) {
  log('our counts differ from the reference:', JSON.stringify(ours));
  process.exit(1);
}
