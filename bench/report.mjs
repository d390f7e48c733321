// Writes docs/benchmarks.md from one run's results (bench/run.mjs): what a session costs with
// each system (bench/cost/report.mjs), then the targets of the counter and the engine with what
// was measured, then every table. Medians everywhere; ratios against the peers measured in the
// same run.
import { costReport, windowsReport } from './cost/report.mjs';

const OURS = 'autocontext';
const PEERS = ['gpt-tokenizer', 'js-tiktoken', 'tiktoken'];

const f1 = (x) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(1));
const f2 = (x) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(2));
const int = (x) => Math.round(x).toLocaleString('en-US');
const kib = (b) => `${(b / 1024).toFixed(0)} KiB`;
const mib = (b) => `${(b / 2 ** 20).toFixed(2)} MiB`;
const size = (b) => (b >= 2 ** 20 ? mib(b) : kib(b));
const mb = (b) => `${(b / 1e6).toFixed(2)} MB`;
const table = (head, rows) => [`| ${head.join(' | ')} |`, `|${head.map((h, i) => (i === 0 ? '---' : '---:')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const geomean = (xs) => Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);

/** MB/s of a run over the groups `keep` selects (CPU time; `field: 'seconds'` for wall-clock): first round, and median of the later rounds. */
function speed(run, keep, field = 'cpuSeconds') {
  const groups = run.groups.filter(keep);
  const bytes = groups.reduce((n, g) => n + g.bytes, 0);
  const rounds = groups[0]?.[field].length ?? 0;
  const at = (i) => groups.reduce((s, g) => s + g[field][i], 0);
  const first = bytes / at(0) / 1e6;
  const later = rounds > 1 ? median(Array.from({ length: rounds - 1 }, (_, i) => bytes / at(i + 1) / 1e6)) : first;
  return { bytes, texts: groups.reduce((n, g) => n + g.texts, 0), tokens: groups.reduce((n, g) => n + g.tokens, 0), first, later };
}

function throughputTable(r, encoding, keyOf, keys) {
  const runs = r.throughput.filter((x) => x.encoding === encoding || x.counter === 'autocontext/lite');
  const get = (counter) => runs.find((x) => x.counter === counter);
  const rows = keys.map((key) => {
    const keep = (g) => keyOf(g) === key;
    const ours = speed(get(OURS), keep);
    const gpt = speed(get('gpt-tokenizer'), keep);
    const cells = [key, int(ours.texts), f2(ours.bytes / 1e6), `${f1(ours.first)} / ${f1(ours.later)}`];
    for (const p of PEERS) {
      const s = speed(get(p), keep);
      cells.push(p === 'gpt-tokenizer' ? `${f1(s.first)} / ${f1(s.later)}` : f1(s.later));
    }
    cells.push(`**${f2(ours.first / gpt.first)}×** / **${f2(ours.later / gpt.later)}×**`);
    if (encoding === 'o200k_base') cells.push(f1(speed(get('autocontext/lite'), keep).later));
    return cells;
  });
  const head = ['bucket', 'texts', 'MB', 'autocontext MB/s (new / seen)', 'gpt-tokenizer MB/s (new / seen)', 'js-tiktoken MB/s', 'tiktoken (wasm) MB/s', '× gpt-tokenizer (new / seen)'];
  if (encoding === 'o200k_base') head.push('autocontext/lite estimator MB/s');
  return table(head, rows);
}

/** The vocabulary-size target: ours against gpt-tokenizer's (the smallest peer), o200k_base. */
function vocabTarget(r, mismatches, met) {
  const v = r.vocabSizes?.find((x) => x.encoding === 'o200k_base');
  if (!v || v.ours === null || v['gpt-tokenizer'] === null) return [];
  return [
    [
      "vocabulary smaller than gpt-tokenizer's, identical counts (o200k_base)",
      `${kib(v.ours)} against ${kib(v['gpt-tokenizer'])} gzip (${f2(v.ours / v['gpt-tokenizer'])}×); ${mismatches} mismatches`,
      met(v.ours < v['gpt-tokenizer'] && mismatches === 0),
    ],
  ];
}

export function report(r) {
  const m = r.machine;
  const o200k = r.throughput.filter((x) => x.encoding === 'o200k_base');
  const kb = (run) => speed(run, (g) => g.bucket === '~1 KB');
  const oursKb = kb(o200k.find((x) => x.counter === OURS));
  const gptKb = kb(o200k.find((x) => x.counter === 'gpt-tokenizer'));
  const coldOurs = r.cold.find((c) => c.counter === OURS && c.encoding === 'o200k_base');
  const sizeOf = (prefix) => r.sizes.find((s) => s.name.startsWith(prefix));
  const def = sizeOf('autocontext (');
  const lite = sizeOf('autocontext/lite');
  const growth = r.engine.growth.rows;
  const growthRatio = growth.at(-1).medianUs / growth[0].medianUs;
  const pass = r.engine.pass.modes.find((x) => x.mode === 'no summarizer');
  const passFull = r.engine.pass.modes.find((x) => x.mode === 'instant summarizer');
  const nativePass = (mode) => r.nativePass?.modes.find((x) => x.mode === mode);
  const trimOurs = r.engine.trim.reduce((s, x) => s + x.oursMs, 0);
  const trimTheirs = r.engine.trim.reduce((s, x) => s + x.trimMs, 0);
  const trimTheirsFirst = r.engine.trim.reduce((s, x) => s + x.trimFirstMs, 0);
  const trimOursFirst = r.engine.trim.reduce((s, x) => s + x.oursFirstMs, 0);
  const ourMismatches = r.exactness.filter((e) => e.counter === OURS).reduce((n, e) => n + e.mismatches, 0);
  const met = (ok) => (ok ? 'met' : '**not met**');

  const out = [];
  out.push('# Benchmarks');
  out.push('');
  out.push(
    'Written by `npm run bench` (bench/, benches/tokens.rs, benches/pass.rs) in one run; do not edit by hand. The session cost replays every trace of the shared corpus and traces-extra against each system, each in a process of its own, and scores each request for what it keeps of what the agent used next (`node bench/cost.mjs` reruns it alone, and `--systems` and `--traces` pick a subset: `node bench/cost.mjs --systems default --traces astroid`). Every counter runs in its own fresh Node process on the same texts: each message text and tool-call argument of the shared corpus, plus generated English prose, source code, JSON and CJK text cut to about 100 B, 1 KB, 10 KB and 100 KB. Medians; ratios are against peers measured in the same run.',
  );
  out.push('');
  out.push(
    'Times in Node are the measuring process\'s CPU time (user + system), not wall-clock time: the machine is shared, and its load inflates wall-clock time by whatever the neighbours do, differently for each process, which would make the ratios between processes meaningless. On an idle machine the two agree within the engines\' background threads (compilation, GC), which CPU time includes. Cold start shows both. The native benchmarks (Rust, no CPU clock in std) are wall-clock.',
  );
  out.push('');
  out.push(
    `Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB.toFixed(0)} GiB; ${m.os}; Node ${m.node}; ${m.rustc}. ` +
      `Run ${m.date}, ${(m.seconds / 60).toFixed(1)} min; load average ${m.loadStart.map(f2).join(', ')} at the start and ${m.loadEnd.map(f2).join(', ')} at the end` +
      (m.cores && m.loadStart[0] > m.cores * 0.75 ? ' (a loaded machine: absolute numbers are low, ratios hold better).' : '.') +
      (m.smoke ? ' **Smoke run: a handful of texts and one round, numbers meaningless.**' : ''),
  );
  out.push(
    `Peers: gpt-tokenizer ${m.versions['gpt-tokenizer']}, js-tiktoken ${m.versions['js-tiktoken']}, tiktoken ${m.versions.tiktoken} (npm), langchain ${m.versions.langchain}, @langchain/core ${m.versions['@langchain/core']}, @mastra/core ${m.versions['@mastra/core']}, @strands-agents/sdk ${m.versions['@strands-agents/sdk']}.`,
  );
  if (m.buildSeconds !== undefined) out.push(`Building the package (three WebAssembly builds, bindings, TypeScript) took ${f1(m.buildSeconds)} s before this run.`);
  out.push('');

  if (r.costWindows) {
    out.push(windowsReport(r.costWindows, { level: 2, chart: (w) => `cost-${w / 1000}k.svg` }));
  }
  if (r.cost) {
    out.push(costReport(r.cost, { level: 2 }));
  }

  out.push('## Targets of the counter and the engine');
  out.push('');
  out.push(
    table(
      ['target', 'measured', ''],
      [
        [
          'exact counting ≥ 2.5× gpt-tokenizer on ~1 KB messages, identical counts',
          `${f2(oursKb.first / gptKb.first)}× its speed on new text, ${f2(oursKb.later / gptKb.later)}× on text each has seen (o200k_base, ${f1(oursKb.first)} / ${f1(oursKb.later)} vs ${f1(gptKb.first)} / ${f1(gptKb.later)} MB/s); ${ourMismatches} mismatches in ${int(r.exactness.filter((e) => e.counter === OURS).reduce((n, e) => n + e.texts, 0))} counts`,
          met(oursKb.first / gptKb.first >= 2.5 && oursKb.later / gptKb.later >= 2.5 && ourMismatches === 0),
        ],
        [
          'first exact count after module load ≤ 25 ms (o200k_base)',
          `${f1(coldOurs.totalCpuMs)} ms of CPU (import ${f1(coldOurs.loadCpuMs)} + first count ${f1(coldOurs.firstCountCpuMs)}); ${f1(coldOurs.totalMs)} ms wall-clock at this load`,
          met(coldOurs.totalCpuMs <= 25),
        ],
        ['o200k_base build, .wasm ≤ 1.1 MB gzip', `${mb(def.wasmGzip)} (${mib(def.wasmGzip)}); JavaScript ${kib(def.jsGzip)} beside it`, met(def.wasmGzip <= 1.1e6)],
        ...vocabTarget(r, ourMismatches, met),
        ['estimator-only build, .wasm ≤ 120 KB gzip', `${int(lite.wasmGzip / 1000)} KB (${kib(lite.wasmGzip)}); JavaScript ${kib(lite.jsGzip)} beside it`, met(lite.wasmGzip <= 120e3)],
        ['`add` + trigger check constant up to 10,000 messages', `${f1(growth[0].medianUs)} µs per message at ${int(growth[0].messages)}, ${f1(growth.at(-1).medianUs)} µs at ${int(growth.at(-1).messages)} (×${f2(growthRatio)})`, met(growthRatio < 1.5)],
        [
          'one pass over the largest corpus trace ≤ 5 ms in Node, host time excluded',
          `${f1(pass.engineMs)} ms of CPU (${f1(pass.engineWallMs)} ms wall-clock) without a summarizer, ${f1(passFull.engineMs)} ms (${f1(passFull.engineWallMs)}) with one` +
            (r.nativePass ? `; the same pass natively ${f1(nativePass('no summarizer').passMs)} and ${f1(nativePass('instant summarizer').passMs)} ms` : ''),
          met(pass.engineMs <= 5),
        ],
        [
          'stateless `compress()` ≤ 0.35× `trimMessages`',
          `${f2(trimOurs / trimTheirs)}× in total over ${r.engine.trim.length} traces on text each side has seen (${int(trimOurs)} vs ${int(trimTheirs)} ms), ${f2(trimOursFirst / trimTheirsFirst)}× at first sight (${int(trimOursFirst)} vs ${int(trimTheirsFirst)} ms)`,
          met(trimOurs / trimTheirs <= 0.35),
        ],
        ...longTargets(r.long, met),
        ...workerTurnTargets(r.workerTurn, met),
      ],
    ),
  );
  out.push('');

  const gaps = [];
  if (!(oursKb.first / gptKb.first >= 2.5 && oursKb.later / gptKb.later >= 2.5 && ourMismatches === 0)) {
    const kinds = ['corpus', 'prose', 'code', 'json', 'cjk'].map((k) => {
      const keep = (g) => g.bucket === '~1 KB' && g.kind === k;
      return { k, ratio: speed(o200k.find((x) => x.counter === OURS), keep).first / speed(o200k.find((x) => x.counter === 'gpt-tokenizer'), keep).first };
    });
    const worst = kinds.reduce((a, b) => (b.ratio < a.ratio ? b : a));
    gaps.push(
      `**Exact counting, ${f2(oursKb.first / gptKb.first)}× gpt-tokenizer on new text** (${f2(oursKb.later / gptKb.later)}× on text each has seen). By kind at ~1 KB (new text): ${kinds.map((x) => `${x.k} ${f2(x.ratio)}×`).join(', ')}; the weakest, ${worst.k}, is where most pieces are long and need merging.`,
    );
  }
  if (def.wasmGzip > 1.1e6) {
    const v = r.vocabSizes?.find((x) => x.encoding === 'o200k_base');
    gaps.push(
      `**Default build, .wasm ${mb(def.wasmGzip)} gzip.** ${v?.ours ? `The vocabulary is ${kib(v.ours)} of it (gpt-tokenizer's is ${kib(v['gpt-tokenizer'])}); ` : ''}the rest is the engine, compiled for speed (opt-level 2): opt-level "s" for the engine alone (the counter, a crate of its own, kept at 2) gives a 1.07 MB .wasm, but 12-20% more CPU for every \`add\` and 15-20% for a pass, which every user pays on every message. What is left is the engine's code, the same as the estimator-only build's (below).`,
    );
  }
  if (coldOurs.totalCpuMs > 25) {
    const liteCold = r.cold.find((c) => c.counter === 'autocontext/lite');
    gaps.push(
      `**First count, ${f1(coldOurs.totalCpuMs)} ms.** The import is reading, compiling and instantiating a ${mib(def.wasmRaw)} module and loading the JavaScript around it (${f1(coldOurs.loadCpuMs)} ms; the estimator-only build, the same engine and JavaScript without a vocabulary, takes ${liteCold ? f1(liteCold.loadCpuMs) : '–'} ms). The first count decodes the vocabulary, 199,998 tokens rebuilt from their pairs into 1.40 MB of bytes and 0.8 MB of spans, and groups the tokens by hash into 65,536 buckets of about 3; the 2 MiB hash table is filled a bucket at a time as lookups reach them (all the rest at once after 512), so a 1 KB message indexes some 300 tokens, not 200,000 (${f1(coldOurs.firstCountCpuMs)} ms; ${r.native ? f1(r.native.first.find((x) => x.encoding === 'o200k_base').ours_ms) : '–'} ms natively), in WebAssembly that starts in V8's baseline compiler and pays a page fault for each page it touches first. Shipping the index itself would cost about 1.2 MB more gzip (its slots are random data). Of the import, compiling the module takes about 8 ms of CPU in Node, most of it validating all of it at once (V8 compiles each function at its first call; the estimator-only build's 0.8 MB and the default build's 1.8 MB compile alike, their code being about the same size). Each export returns one value, so V8 calls all of them through one generic wrapper: wasm-bindgen's multi-value returns had V8 compile a wrapper for each of 26 signatures up front, about 4 ms more of every compile. Loading the package's JavaScript takes most of the rest: Node's module loader pays some 0.3 to 0.5 ms of CPU for each file an import reaches, so each entry point is bundled into one file, beside the few modules that must stay one instance (5 files for the default entry; esbuild's shared chunks made it 9 and took about 5 ms more, the unbundled graph of some twenty modules more still).`,
    );
  }
  if (lite.wasmGzip > 120e3) {
    const parts = r.liteBreakdown ? r.liteBreakdown.byCrate.slice(0, 7).map(([c, b]) => `${c} ${kib(b)}`).join(', ') : 'not measured';
    gaps.push(
      `**Estimator-only build, ${kib(lite.wasmGzip + lite.jsGzip)} gzip.** The estimator is a few hundred bytes of code; this build is the whole engine without a vocabulary, already optimized for size (opt-level "z"; wasm-opt -Oz made it larger once compressed). Its linked code${r.liteBreakdown ? ` (${kib(r.liteBreakdown.code)}, data ${kib(r.liteBreakdown.data)})` : ''} by crate, from symbol names: ${parts}. Reaching 120 KB means a smaller engine (its JSON handling, formatting and the async bridge to JavaScript), not a smaller counter.`,
    );
  }
  if (pass.engineMs > 5) {
    gaps.push(
      `**One pass, ${f1(pass.engineMs)} ms.** The pass over this trace replaces ${int(pass.tokensBefore - pass.tokensAfter)} tokens in ${pass.events} steps: it writes every original it offloads as JSON (${int((pass.storeBytes ?? 0) / 1000)} KB for this trace), hands each payload to the store as UTF-8 bytes (every shipped store takes them: \`acceptsBytes\`), and counts every text it writes (a truncated tool result keeps its head and tail). ` +
        (r.nativePass ? `The engine itself does this in ${f1(nativePass('no summarizer').passMs)} ms natively (benches/pass.rs), about half of it the identifier index: this first pass scans every message of the trace (about 650 KB of text) for the identifiers its replacements name and those that stay in view; a message is scanned once and its identifiers kept, so later passes scan only what is new. ` : '') +
        `In Node, a CPU profile of this pass (taken separately, with symbol names) put, of the engine's own time before truncated texts were counted from their originals' marks, about 43% in the identifier index (the scan of every message 25%, the ranking of a span's identifiers most of the rest), 20% in counting the new texts (natively about half of that is gone since), 9% in writing JSON (the payloads and the log's chunk), 8% in handing them to the store and the rest in planning; V8's garbage collection comes on top. The CPU figure is above the wall-clock one by V8's optimizing compiler, which compiles the pass's functions on helper threads as they turn hot, in the first passes of a process (with every function compiled optimized before the first call, \`--no-wasm-dynamic-tiering\`, CPU and wall-clock time agree at about 10.8 ms); the sweeping that follows the bench's own \`gc()\` before each run, which it used to count too, is left to finish first. Done: payloads written from borrowed values, XXH64 digests, character counts settled from the byte length, payloads handed over as bytes instead of strings (Node's UTF-8 decoding of them was a fifth of the pass), the identifier scan's substring tests without a searcher built per call, the scan about twice as fast (plain words settled in its walk, the engine's own words and uuids left out only where a line takes a word) and then 5% fewer instructions for the pass (the arrows, box drawing and dashes of tool output stepped over sixteen bytes at a time, one set reused for every text, a short hash for identifiers' keys), JSON written eight bytes of a string at a time into room made for it at once (the log's chunks no longer copied into a JSON tree first), the log's chunk after a pass copied from the payloads that hold the same originals instead of written again (the working list and the log share each message's value), the module's allocator Talc instead of dlmalloc (about 12% less CPU for this pass in Node, paired), a cut's size decided without writing it, and a truncated tool result counted from its original's marks (byte-pair counts are not additive across a cut, so the counter keeps, for the long texts it counted lately, the count at a piece boundary every 512 bytes, and counts a cut text's head only from the last of them: about 1.6% of the text in memory, 2% more work for \`add\`).`,
    );
  }
  const noPass = r.workerTurn?.cases.find((x) => x.kind === 'no pass');
  if (noPass && noPass.threadMs > 2) {
    const turn = r.workerTurn;
    const native = (kind) => turn.native?.cases.find((c) => c.case === kind);
    const phase = (c, name) => c?.phases.find((p) => p.phase === name)?.ms;
    const cold = native('no pass');
    gaps.push(
      `**A Worker turn without a pass, ${f1(noPass.threadMs)} ms.** ${cold ? `Natively the turn is ${f2(cold.turnMs)} ms, the restore ${f2(phase(cold, 'restore'))} of it. ` : ''}A load parses the state's head and the page the last exchange begins in and those after it, and reads the offload index's records straight from its pages' text (a save lays each out one way; a page laid out otherwise is parsed); the pages before the last exchange stay unparsed, read by the facts the head keeps of them, and \`messages()\` cuts their messages out of their text; the events stay unparsed too, vouched for by the head's digest of their pages, until a pass adds to them. What is left is mostly that text handed to the module and back, \`messages()\` parsed again in JavaScript, and the save.`,
    );
  }
  if (trimOurs / trimTheirs > 0.35) {
    gaps.push(
      `**compress() against trimMessages, ${f2(trimOurs / trimTheirs)}×.** \`compress()\` reads the wire JSON, counts every message exactly, then offloads and truncates with every original kept recoverable and writes the result back as wire JSON; \`trimMessages\` only drops messages from a list of objects whose counts it is handed. On the largest traces the pass itself (above) is most of our time.`,
    );
  }
  if (gaps.length > 0) {
    out.push('## Where the gaps come from');
    out.push('');
    for (const g of gaps) {
      out.push(`- ${g}`);
    }
    out.push('');
  }

  for (const encoding of ['o200k_base', 'cl100k_base']) {
    out.push(`## Exact counting throughput in Node, ${encoding}, by message size`);
    out.push('');
    out.push(throughputTable(r, encoding, (g) => g.bucket, ['~100 B', '~1 KB', '~10 KB', '~100 KB'].filter((b) => r.throughput[0].groups.some((g) => g.bucket === b))));
    out.push('');
  }
  out.push('## Exact counting throughput in Node, o200k_base, ~1 KB messages by kind');
  out.push('');
  out.push(throughputTable(r, 'o200k_base', (g) => (g.bucket === '~1 KB' ? g.kind : null), ['corpus', 'prose', 'code', 'json', 'cjk']));
  out.push('');
  const wallKb = speed(o200k.find((x) => x.counter === OURS), (g) => g.bucket === '~1 KB', 'seconds');
  out.push(
    `Wall-clock in the same run: ${f1(wallKb.first)} MB/s for ours at ~1 KB on new text against ${f1(oursKb.first)} MB/s of CPU time, the share of a core the process got at this load. ` +
      'MB/s of UTF-8 input through each package\'s public counting call (ours: `countTokens(text, encoding)`, the JavaScript → WebAssembly call included; `autocontext` is the default build for o200k_base and `autocontext/full` for cl100k_base). "new" is a counter\'s first sight of the texts (after a warm-up on other text), "seen" the median of the later rounds, each counter\'s best case: gpt-tokenizer keeps the tokens of every piece it has counted, without bound, so counting a text again is mostly lookups; ours remembers the count of each text of 128 bytes or more it counted lately (a table of 16,384 by the text\'s hash and length, 256 KiB), so counting it again is hashing it, and splits and counts shorter ones afresh. js-tiktoken ran 3 rounds, the others 5. Each counter ran in two processes, in two sweeps over all counters (the second in the opposite order), and the table shows the faster of the two: the machine is shared, and a slow spell can last through one process.',
  );
  out.push('');

  out.push('## Exactness');
  out.push('');
  out.push(
    table(
      ['counter', 'encoding', 'texts', 'differs from tiktoken', 'examples'],
      r.exactness.map((e) => [e.counter, e.encoding, int(e.texts), int(e.mismatches), e.examples.map((x) => `${x.kind} ${x.bytes} B: ${x.got} vs ${x.want}`).join('; ') || '–']),
    ),
  );
  out.push('');
  out.push('The reference is the `tiktoken` npm package (OpenAI\'s tiktoken in WebAssembly). The native tests compare our counter with tiktoken-rs on the same corpus plus generated adversarial and random Unicode text (tests/tokens_exact.rs).');
  out.push('');

  out.push('## Cold start (fresh process: import, then the first count of a ~1 KB message)');
  out.push('');
  out.push(
    table(
      ['counter', 'encoding', 'import, wall ms', 'first count, wall ms', 'total, wall ms', 'import, CPU ms', 'first count, CPU ms', 'total, CPU ms', 'peak RSS over baseline'],
      r.cold.map((c) => {
        const run = r.throughput.find((x) => x.counter === c.counter && x.encoding === c.encoding);
        return [
          c.counter,
          c.counter === 'autocontext/lite' ? 'estimate' : c.encoding,
          f1(c.loadMs),
          f1(c.firstCountMs),
          f1(c.totalMs),
          f1(c.loadCpuMs),
          f1(c.firstCountCpuMs),
          `**${f1(c.totalCpuMs)}**`,
          run ? mib((run.maxRssKb - r.baselineRssKb) * 1024) : '–',
        ];
      }),
    ),
  );
  out.push('');
  out.push(
    `Medians of 7 processes per counter, taken in rounds over all the counters (each one\'s first process, then each one\'s second, ...), so that a slow spell of the shared machine falls on all of them alike. "Peak RSS over baseline" is the peak resident memory of the throughput process (all texts counted, every round) minus that of a process holding the same texts (${mib(r.baselineRssKb * 1024)}).`,
  );
  out.push('');

  out.push('## Adversarial input: one long word of random letters (ms per call)');
  out.push('');
  const letters = [...new Set(r.adversarial.flatMap((a) => a.rows.map((x) => x.letters)))].sort((a, b) => a - b);
  const advRows = [];
  for (const encoding of ['o200k_base', 'cl100k_base']) {
    for (const n of letters) {
      const cells = [encoding, int(n)];
      for (const c of [OURS, ...PEERS]) {
        const row = r.adversarial.find((a) => a.counter === c && a.encoding === encoding)?.rows.find((x) => x.letters === n);
        cells.push(row ? f1(row.ms) : 'skipped');
      }
      advRows.push(cells);
    }
  }
  out.push(table(['encoding', 'letters', OURS, ...PEERS], advRows));
  out.push('');
  out.push('CPU ms of one call. A counter stops at the first size that takes over 2 s ("skipped" after it). Such a word is one piece for the split, so the cost is all byte-pair merging; ours merges long pieces with a heap (O(n log n)).');
  out.push('');

  if (r.native) {
    out.push('## The core natively (`cargo bench --bench tokens`), against tiktoken-rs');
    out.push('');
    out.push(
      table(
        ['encoding', 'bucket', 'texts', 'MB', 'ours MB/s', 'tiktoken-rs MB/s', '×'],
        r.native.throughput.map((x) => [x.encoding, x.bucket, int(x.texts), f2(x.bytes / 1e6), f1(x.ours_mb_s), f1(x.tiktoken_rs_mb_s), `**${f2(x.ours_mb_s / x.tiktoken_rs_mb_s)}×**`]),
      ),
    );
    out.push('');
    out.push(
      `First count (vocabulary decoded or parsed): ${r.native.first.map((x) => `${x.encoding} ours ${f1(x.ours_ms)} ms, tiktoken-rs ${f1(x.tiktoken_rs_ms)} ms`).join('; ')}. ` +
        `One long word: ${r.native.adversarial.filter((x) => x.encoding === 'o200k_base').map((x) => `${int(x.letters)} letters ${f2(x.ours_ms)} ms (tiktoken-rs ${f2(x.tiktoken_rs_ms)})`).join(', ')}. ` +
        `Mismatches against tiktoken-rs: ${r.native.mismatches}. Wall-clock, medians of ${r.native.rounds} rounds.`,
    );
    out.push('');
  }

  out.push('## Size of each build');
  out.push('');
  out.push(
    table(
      ['build', '.wasm', 'gzip -9', 'brotli 11', 'JavaScript (minified) gzip', 'total gzip', 'total brotli'],
      r.sizes.map((s) => [s.name, size(s.wasmRaw), size(s.wasmGzip), size(s.wasmBrotli), kib(s.jsGzip), `**${size(s.wasmGzip + s.jsGzip)}**`, size(s.wasmBrotli + s.jsBrotli)]),
    ),
  );
  out.push('');
  out.push(
    'The JavaScript is what a bundler ships with the module (the Worker entry, its wrapper and the wasm-bindgen glue, minified by esbuild). Each vocabulary is embedded as its 256 single bytes and, for every later token, the two lower-ranked tokens it concatenates (byte-pair encoding builds every token from two earlier ones), each rank as a byte naming its order of magnitude and the bits below it; the first count decodes it into one buffer of token bytes and indexes what lookups reach, a bucket of about three tokens at a time. The default and full builds are compiled at opt-level 2, the estimator-only build at "z"; the exact counter is a crate of its own, so its level can differ from the engine\'s (at "s" it counts about 40% slower in Node).',
  );
  out.push('');

  if (r.vocabSizes) {
    out.push(
      table(
        ['vocabulary, gzip -9', 'autocontext (in the .wasm)', 'gpt-tokenizer (JavaScript)', 'js-tiktoken (JavaScript)'],
        r.vocabSizes.map((v) => [v.encoding, v.ours === null ? '–' : `**${kib(v.ours)}**`, v['gpt-tokenizer'] === null ? '–' : kib(v['gpt-tokenizer']), v['js-tiktoken'] === null ? '–' : kib(v['js-tiktoken'])]),
      ),
    );
    out.push('');
  }

  out.push('## `add` + trigger check as a conversation grows');
  out.push('');
  out.push(
    table(
      ['messages so far', 'add + needsCompression, median µs', 'mean µs', 'recounting the whole list with gpt-tokenizer, ms'],
      growth.map((g) => [int(g.messages), `**${f1(g.medianUs)}**`, f1(g.meanUs), f1(g.recountMs)]),
    ),
  );
  out.push('');
  out.push(
    `One memory (default build), ${int(r.engine.growth.total)} messages of 0.7–1.4 KB (100 corpus texts, each numbered so that no text comes twice), budget out of reach; each row is the 100 appends before that size. The last column is what a host without per-message counts pays per append instead.`,
  );
  out.push('');

  out.push('## One compression pass over the largest corpus trace');
  out.push('');
  const p = r.engine.pass;
  out.push(
    table(
      ['summarizer', 'engine ms (host excluded)', 'engine ms, wall-clock', 'host ms', 'pass ms', 'tokens before → after', 'messages after', 'events', 'store calls', 'summaries', 'add ms (all messages)'],
      p.modes.map((x) => [x.mode, `**${f1(x.engineMs)}**`, f1(x.engineWallMs), f1(x.hostMs), f1(x.totalMs), `${int(x.tokensBefore)} → ${int(x.tokensAfter)}`, int(x.after), int(x.events), int(x.storeCalls), int(x.summaries), f1(x.addMs)]),
    ),
  );
  out.push('');
  if (r.nativePass) {
    out.push(
      `The same pass natively (\`cargo bench --bench pass\`, the engine alone with an in-memory store, wall-clock, medians of ${r.nativePass.rounds} runs): ` +
        r.nativePass.modes.map((x) => `${x.mode} **${f2(x.passMs)} ms** (${int(x.tokensBefore)} → ${int(x.tokensAfter)} tokens, ${x.events} events; adding the ${int(r.nativePass.messages)} messages ${f1(x.addMs)} ms)`).join(', ') +
        '. Token counts after a pass differ by a few between runs: each offload marker carries a random uuid, and uuids tokenize differently.',
    );
    out.push('');
  }
  out.push(`Trace \`${p.trace}\` (${int(p.messages)} messages) added whole, then one \`compressIfNeeded()\` in a 32,000-token window, each run on texts new to the process (a number or spaces added to the end of each text: the engine remembers the counts and identifiers of texts it met lately, which a memory restored for every request finds); the time inside the host's store and summarize calls is measured and subtracted. CPU time, a full garbage collection before each run; medians of at least 5 runs.`);
  out.push('');

  if (r.long) {
    out.push(longReport(r.long));
    out.push('');
  }
  if (r.workerTurn) {
    out.push(workerTurnReport(r.workerTurn));
    out.push('');
  }

  out.push('## Stateless `compress()` against LangChain.js `trimMessages`');
  out.push('');
  out.push(
    table(
      ['trace', 'messages', 'compress() ms (first sight / seen)', 'trimMessages ms (first sight / seen)', 'ratio (first sight / seen)', 'kept (ours / theirs)'],
      r.engine.trim.map((x) => [
        x.trace,
        int(x.messages),
        `${f1(x.oursFirstMs)} / ${f1(x.oursMs)}`,
        `${f1(x.trimFirstMs)} / ${f1(x.trimMs)}`,
        `${f2(x.oursFirstMs / x.trimFirstMs)} / ${f2(x.oursMs / x.trimMs)}`,
        `${x.kept} / ${x.trimmed}`,
      ]),
    ),
  );
  out.push('');
  if (r.engine.trim.length > 0) {
    out.push(
      `Total at first sight ${int(trimOursFirst)} ms against ${int(trimTheirsFirst)} ms (**${f2(trimOursFirst / trimTheirsFirst)}×**), on text seen before ${int(trimOurs)} ms against ${int(trimTheirs)} ms (**${f2(trimOurs / trimTheirs)}×**); geometric mean of the per-trace ratios ${f2(geomean(r.engine.trim.map((x) => x.oursFirstMs / x.trimFirstMs)))}× and ${f2(geomean(r.engine.trim.map((x) => x.oursMs / x.trimMs)))}×.`,
    );
    out.push('');
  }
  out.push(
    "Same messages, same 32,000-token window: `compress(messages, { maxToken: 32000 })` (default build, no summarizer: truncation and offloads into a MemoryStore, every original recoverable, the wire JSON in and out included) against `trimMessages(messages, { maxTokens: 24000, strategy: 'last', includeSystem: true, startOn: 'human' })` on the same messages as LangChain objects (made beforehand, not timed), with a token counter that counts each message once per call with gpt-tokenizer (o200k_base) using the same per-message accounting. Each side in a process of its own, a full garbage collection before every run, CPU time. \"First sight\" is each side's first run on a trace (a process that has not met its text: gpt-tokenizer's merge cache has not seen it, and ours has counted and scanned none of it), \"seen\" the median of the 6 later runs (a long-lived process that handled the conversation before, as a request handler calling compress() before every model call does: gpt-tokenizer has the tokens of its pieces, ours the counts and identifiers of its texts of 128 bytes or more, and what is new is counted and scanned afresh).",
  );
  out.push('');
  return out.join('\n');
}

/** The long-session targets (DESIGN.md, performance budget), when the run measured them. */
function longTargets(long, met) {
  if (!long) return [];
  const s = long.session.rows;
  const w = long.worker.rows;
  const over = w.at(-1).hwmMB - long.worker.idleRssMB;
  const stateGrowth = w.at(-1).stateMB / w[0].stateMB;
  const restored = long.worker.restored;
  const restoredOver = restored ? restored.hwmMB - restored.idleRssMB : over;
  return [
    [
      `a session of ${int(w.at(-1).history)} messages runs in a Durable Object under 128 MB`,
      (restored
        ? `restored from storage after a restart: workerd ${int(restored.hwmMB)} MB resident at its peak, ${int(restoredOver)} MB over its ${int(restored.idleRssMB)} MB at rest, the engine's memory ${f1(restored.engineMB)} MB; `
        : '') +
        `through the run the process grew to ${int(w.at(-1).hwmMB)} MB, ${int(over)} MB over rest, the engine's memory ${w.at(-1).engineMB === undefined ? '–' : f1(w.at(-1).engineMB)} MB`,
      met(restoredOver <= 128),
    ],
    [
      'engine memory and `toJSON()` sized by the working list, not the history (within 2× from the first checkpoint to the last)',
      `from ${int(s[0].history)} to ${int(s.at(-1).history)} messages: engine memory ${f1(s[0].memoryMB)} → ${f1(s.at(-1).memoryMB)} MB, state ${int(s[0].stateKB)} → ${int(s.at(-1).stateKB)} KB, toJSON ${f1(s[0].toJsonMs)} → ${f1(s.at(-1).toJsonMs)} ms; in the Worker, saved state ${f2(w[0].stateMB)} → ${f2(w.at(-1).stateMB)} MB`,
      met(s.at(-1).memoryMB / s[0].memoryMB <= 2 && s.at(-1).stateKB / s[0].stateKB <= 2 && stateGrowth <= 2),
    ],
    ...(s[0].stateBesideKB === undefined
      ? []
      : [
          [
            'what the history can grow in `toJSON()`: the state beside the working list (within 2×)',
            `${int(s[0].stateBesideKB)} → ${int(s.at(-1).stateBesideKB)} KB (the working list itself was ${int(s[0].workingKB)} KB and ${int(s.at(-1).workingKB)} KB at those points)`,
            met(s.at(-1).stateBesideKB / s[0].stateBesideKB <= 2),
          ],
        ]),
    ...(long.session.sweep === undefined
      ? []
      : [
          [
            '`sweep({ sessions })` after a writer killed mid-save leaves 0 orphans',
            `${int(long.session.sweep.orphans)} orphans deleted of ${int(long.session.sweep.listed)} keys listed; of the ${int(long.session.sweep.left)} keys left, ${int(long.session.sweep.unreached)} the saved state does not reach and ${int(long.session.sweep.missing)} it reaches are missing (found without the engine); ${int(long.session.sweep.ms)} ms for ${int(long.session.sweep.gets)} gets of ${int(long.session.sweep.latencyMs)} ms each`,
            met(long.session.sweep.orphans > 0 && long.session.sweep.unreached === 0 && long.session.sweep.missing === 0),
          ],
        ]),
    ...(s[0].saveKB === undefined
      ? []
      : [
          [
            'saving after a turn costs O(what changed) (bytes a save writes within 2× from the first checkpoint to the last)',
            `\`memory.save(sessions)\` after every group added, median: ${f1(s[0].saveKB)} KB (head ${f1(s[0].saveHeadKB)} KB) at ${int(s[0].history)} messages, ${f1(s.at(-1).saveKB)} KB (head ${f1(s.at(-1).saveHeadKB)} KB) at ${int(s.at(-1).history)}; a save takes ${f1(s[0].saveMs)} → ${f1(s.at(-1).saveMs)} ms`,
            met(s.at(-1).saveKB / s[0].saveKB <= 2),
          ],
        ]),
  ];
}

/** The Worker-turn targets (the free plan's 10 ms of CPU a request), when the run measured them. */
function workerTurnTargets(turn, met) {
  if (!turn) return [];
  const c = (kind) => turn.cases.find((x) => x.kind === kind);
  const row = (x) => `${f1(x.threadMs)} ms of CPU in workerd's isolate thread (${f1(x.totalMs)} ms in all its threads), ${int(x.savedTokens)} tokens restored`;
  return [
    ['a Worker turn with a pass ≤ 10 ms of CPU in workerd, a live session', `${row(c('pass'))}, ${int(c('pass').tokensBefore)} → ${int(c('pass').tokensAfter)} tokens`, met(c('pass').threadMs <= 10)],
    ['the same, the whole largest trace compressed in one turn', `${row(c('whole trace'))}, ${int(c('whole trace').tokensBefore)} → ${int(c('whole trace').tokensAfter)} tokens`, met(c('whole trace').threadMs <= 10)],
    ['a Worker turn without a pass ≤ 2 ms of CPU in workerd', row(c('no pass')), met(c('no pass').threadMs <= 2)],
  ];
}

/** One Worker turn in workerd (bench/worker-turn.mjs). */
function workerTurnReport(turn) {
  const out = [];
  out.push('## A Worker turn in workerd');
  out.push('');
  out.push(
    `What one request of a Cloudflare Worker that keeps a conversation costs in CPU time, the figure the free plan limits to 10 ms (\`node bench/worker-turn.mjs\`): restore the session from its saved state (\`AutoContextMemory.load\`), add the next message (or an assistant message with its tool results), \`compressIfNeeded()\`, \`messages()\`, save (\`memory.save\`), \`dispose()\`. Trace \`${turn.trace}\` (${int(turn.messages)} messages), a ${int(turn.window)}-token window, no summarizer. "Whole trace": the state holds the trace but its last message, never compressed, and the turn compresses all of it; "pass" and "no pass": the session as a Worker keeps it (the trace replayed a group at a time, compressing when needed), restored before the last group whose turn compressed, or the last whose turn did not; "no pass, read before": the same without a pass, in an isolate that ran the session's previous turn too (not measured: load, add, \`compressIfNeeded()\`, save, as a Worker serving the conversation's last request did), so that the load meets the pages that turn saved (the new message there started a user turn, so this turn's \`compressIfNeeded()\` tries a pass: the message count is over \`msgThreshold\`, which only a summary could bring down, and it parses the pages the load left unparsed to find so).`,
  );
  out.push('');
  out.push(
    table(
      ['turn', 'isolate thread, CPU ms', 'all threads, CPU ms', 'slowest run, isolate thread', 'tokens restored', 'messages added', 'tokens before → after the pass'],
      turn.cases.map((x) => [x.kind, `**${f1(x.threadMs)}**`, f1(x.totalMs), f1(x.threadMaxMs), int(x.savedTokens), int(x.added), x.kind.startsWith('no pass') ? '–' : `${int(x.tokensBefore)} → ${int(x.tokensAfter)}`]),
    ),
  );
  out.push('');
  out.push(
    `Medians of ${turn.runs} runs in one isolate, after a turn of each kind that is not measured; each run on texts new to the isolate (a number or spaces added to each text, as for the pass above). The states are made in Node and held in the Worker's memory (MemorySessionStore, MemoryStore), so storage I/O, which the plan does not count, stays out. CPU time is read from /proc per thread of the workerd process before and after each request (inside a Worker the clocks stand still between I/O): the isolate thread is the one that ran the request, all threads add V8's helpers (optimizing compiler, garbage collector); the median of empty requests (${f1(turn.cases[0].emptyThreadMs)} ms, workerd's own HTTP handling) is subtracted. The first turn of a fresh isolate (workerd restarted, no pass: the engine's code runs unoptimized, and compiled as it is first called; the vocabulary is decoded in the Worker's startup, its global scope, which the platform does not bill to a request) took ${f1(turn.fresh.threadMs)} ms in the isolate thread (${f1(turn.fresh.totalMs)} ms in all threads), median of ${turn.fresh.runs}.`,
  );
  out.push('');
  if (turn.node) {
    out.push(
      `The same turns in Node (a child process that has met none of the texts, after a turn of each kind that is not measured), CPU ms by phase, medians; and natively, the engine alone (\`cargo bench --bench turn\`: restore from the head and pages a save wrote, add, the pass, the messages' text, the pages a save writes, dropping the memory), wall ms:`,
    );
    out.push('');
    const phase = (c, name) => c.phases.find((p) => p.phase === name)?.ms;
    const native = (kind) => turn.native?.cases.find((c) => c.case === kind);
    out.push(
      table(
        ['turn', 'where', 'total', 'load / restore', 'add', 'compressIfNeeded', 'messages', 'save / state text', 'dispose / drop'],
        turn.node.flatMap((c) => {
          const rows = [[c.kind, 'Node', `**${f1(c.ms)}**`, ...['load', 'add', 'compressIfNeeded', 'messages', 'save', 'dispose'].map((p) => f1(phase(c, p)))]];
          const n = native(c.kind);
          if (n) rows.push([c.kind, 'native', `**${f2(n.turnMs)}**`, ...['restore', 'add', 'pass', 'messages', 'save', 'drop'].map((p) => f2(phase(n, p)))]);
          return rows;
        }),
      ),
    );
  }
  return out.join('\n');
}

/** The long session: the engine alone in Node, then the example Worker in workerd. */
function longReport(long) {
  const out = [];
  const s = long.session;
  const w = long.worker;
  out.push(`## A long session: ${int(s.rows.at(-1).history)} messages`);
  out.push('');
  out.push(
    'The corpus traces back to back as one conversation (one system message, call ids made unique per repetition), in a 32,000-token window. First the engine alone in Node (`node --expose-gc bench/long-session.mjs`: added group by group, a pass whenever the trigger says so, offline summarizer, MemoryStore):',
  );
  out.push('');
  out.push(
    table(
      ['messages', 'working list', 'working tokens', 'engine memory MB', 'toJSON ms', 'state KB', 'beside the working list KB', 'a save writes KB', 'its head KB', 'save ms', 'passes', 'CPU s'],
      s.rows.map((x) => [int(x.history), int(x.working), int(x.workingTokens), f1(x.memoryMB), f1(x.toJsonMs), int(x.stateKB), x.stateBesideKB === undefined ? '–' : int(x.stateBesideKB), f1(x.saveKB), f1(x.saveHeadKB), f1(x.saveMs), int(x.passes), f1(x.cpuS)]),
    ),
  );
  out.push('');
  out.push(
    `Engine memory is the WebAssembly memory (it grows and never shrinks); toJSON is the median of nine calls, the state its size as JSON text. A save is \`memory.save(sessions)\` (MemorySessionStore) after every group added over the last 200 messages before each checkpoint: the median of the UTF-8 bytes each wrote (the head in the session store, the state's new pages and the log's tail in the offload store), of the head alone, and of its time; the first save of each stretch catches up and is not counted. CPU includes those saves. Beside the working list is the state without its working messages: the offload index, the events and the log's position, the part a longer history could grow.${
      s.sweep
        ? ` At the end a second writer loaded the saved session, added about 200 messages, ran a pass, flushed, and was cut off in a save between its pages and its head; then \`memory.sweep({ sessions })\` on the first writer listed ${int(s.sweep.listed)} keys, read ${int(s.sweep.gets)} (the chunks of the log and of the retired index${s.sweep.latencyMs ? `, each get made to wait ${s.sweep.latencyMs} ms as across a network` : ''}), deleted ${int(s.sweep.orphans)} orphans and took ${int(s.sweep.ms)} ms.`
        : ''
    }${s.skipped > 0 ? ` ${int(s.skipped)} messages the engine refused (a trace's own seam) were skipped.` : ''}`,
  );
  out.push('');
  out.push(
    `Then the same stream through the example Worker (examples/worker) in workerd under miniflare (\`node bench/long-session-worker.mjs\`): one Durable Object holds the conversation, each POST adds ${int(w.batch)} messages (whole groups), compresses if needed and saves the memory's state in the object's storage, offloads go to KV. No model is configured, so passes run only the steps that need none.`,
  );
  out.push('');
  out.push(
    table(
      ['messages', 'POSTs', 'working list', 'working tokens', 'engine memory MB', 'workerd RSS MB', 'workerd peak MB', 'saved state MB', 'SQLite MB', 'POST median ms', 'slowest POST ms', 'elapsed s'],
      w.rows.map((x) => [int(x.history), int(x.requests), int(x.working), int(x.workingTokens), x.engineMB === undefined ? '–' : f1(x.engineMB), int(x.rssMB), int(x.hwmMB), f2(x.stateMB), x.databaseMB === null ? '–' : f1(x.databaseMB), int(x.medianMs), int(x.maxMs), int(x.wallS)]),
    ),
  );
  out.push('');
  out.push(
    `The workerd process is the whole runtime (${int(w.idleRssMB)} MB resident at rest: the Worker loaded and one token count made, before the conversation), miniflare's KV and SQLite included: an upper bound on what the object's isolate holds. Engine memory is the WebAssembly memory of the engine in the object. Saved state is the JSON text the example writes (millions of characters); SQLite is the object's database. POST times are wall-clock on a shared machine, over the stretch since the previous row.${
      w.restored
        ? ` Then workerd restarted on the same storage and the first request restored the conversation (${int(w.restored.working)} messages in the working list) in ${int(w.restored.restoreMs)} ms: the engine's memory ${f1(w.restored.engineMB)} MB, workerd ${int(w.restored.hwmMB)} MB resident at its peak against ${int(w.restored.idleRssMB)} MB at rest.`
        : ''
    }${w.skipped > 0 ? ` ${int(w.skipped)} messages the engine refused were skipped.` : ''}`,
  );
  return out.join('\n');
}
