// The texts every counter is measured on, the same for all of them: each message text and
// tool-call argument of the shared corpus, plus generated messages of four kinds (English prose,
// source code, JSON, CJK) cut to about 100 B, 1 KB, 10 KB and 100 KB, bucketed by size. And the
// conversations of the corpus, for the engine benchmarks.
// Node's built-ins through `process.getBuiltinModule`, not `import`: the first import of one
// builds its ES module namespace (about 2 ms for node:fs), and the cold starts (child-cold.mjs)
// load this module before they start the clock; a counter that imports a built-in pays for it
// there, as in a fresh process.
const { existsSync, readFileSync, readdirSync } = process.getBuiltinModule('node:fs');
const { dirname, join } = process.getBuiltinModule('node:path');
const { fileURLToPath } = process.getBuiltinModule('node:url');

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The shared corpus: `AUTOCONTEXT_CORPUS`, else `../shared/corpus` beside the repository. */
export function corpusDir() {
  return process.env.AUTOCONTEXT_CORPUS ?? join(root, '..', 'shared', 'corpus');
}

/** The corpus traces, `{ name, messages }` (OpenAI chat messages), by file name; empty without a corpus. */
export function traces() {
  const dir = corpusDir();
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({ name: f.replace(/\.json$/, ''), messages: JSON.parse(readFileSync(join(dir, f), 'utf8')).messages }));
}

/** The largest of `traces` by size, its messages as JSON text. */
export function largestTrace(traces) {
  return traces.reduce((a, b) => (JSON.stringify(b.messages).length > JSON.stringify(a.messages).length ? b : a));
}

/**
 * `messages` with every text new to this process: the run's number at the end of each content,
 * a space per run at the end of each tool call's arguments (still the same JSON). The engine
 * remembers the counts and identifiers of the texts it met lately (a new memory of a
 * conversation the process has seen, such as one restored for every request, finds them); a
 * run on these measures a conversation it has not met.
 */
export function unseen(messages, run) {
  const pad = ' '.repeat(run + 1);
  return messages.map((m) => ({
    ...m,
    ...(typeof m.content === 'string' && m.content !== '' ? { content: `${m.content} ${run}` } : {}),
    ...(m.tool_calls ? { tool_calls: m.tool_calls.map((c) => ({ ...c, function: { ...c.function, arguments: c.function.arguments + pad } })) } : {}),
  }));
}

/** The median of `xs` (the upper one of an even count). */
export function median(xs) {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
}

/** Size buckets, by UTF-8 bytes (geometric midpoints between the nominal sizes). */
export const BUCKETS = [
  { name: '~100 B', min: 0, max: 316 },
  { name: '~1 KB', min: 316, max: 3162 },
  { name: '~10 KB', min: 3162, max: 31623 },
  { name: '~100 KB', min: 31623, max: Infinity },
];

/** xorshift64, for reproducible generated text. */
function* xorshift(seed) {
  let x = BigInt(seed);
  const mask = (1n << 64n) - 1n;
  for (;;) {
    x ^= (x << 13n) & mask;
    x ^= x >> 7n;
    x ^= (x << 17n) & mask;
    yield x;
  }
}

/** Deterministic CJK-heavy text: ideographs, kana, hangul, CJK punctuation, some digits and breaks. */
export function cjkText(chars) {
  const rng = xorshift(0x2545f4914f6cdd1dn);
  let s = '';
  for (let i = 0; i < chars; i++) {
    const x = rng.next().value;
    const r = Number(x % 20n);
    const v = Number((x >> 8n) % 100000n);
    if (r <= 9) s += String.fromCodePoint(0x4e00 + (v % 3000));
    else if (r <= 13) s += String.fromCodePoint(0x3041 + (v % 83));
    else if (r <= 15) s += String.fromCodePoint(0x30a1 + (v % 90));
    else if (r === 16) s += String.fromCodePoint(0xac00 + (v % 2000));
    else if (r === 17) s += '，。、「」！'[v % 6];
    else if (r === 18) s += String(v % 10);
    else s += v % 3 === 0 ? '\n' : ' ';
  }
  return s;
}

/** One adversarial "word": `n` pseudo-random lowercase letters, no space (one piece for the split). */
export function longWord(n) {
  const rng = xorshift(0x9e3779b97f4a7c15n);
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCharCode(97 + Number(rng.next().value % 26n));
  return s;
}

function readTree(dir, ext) {
  if (!existsSync(dir)) return '';
  let out = '';
  for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out += readTree(p, ext);
    else if (e.name.endsWith(ext)) out += readFileSync(p, 'utf8');
  }
  return out;
}

/** Cuts `text` into pieces of about `size` UTF-16 units until `total` is taken (never splitting a surrogate pair). */
function cut(text, size, total) {
  const out = [];
  let at = 0;
  let taken = 0;
  while (at < text.length && taken < total) {
    let end = Math.min(at + size, text.length);
    if (end < text.length && /[\uDC00-\uDFFF]/.test(text[end])) end += 1;
    out.push(text.slice(at, end));
    taken += end - at;
    at = end;
  }
  return out;
}

/**
 * The measured texts, `{ kind, bucket, text }`. `perKind` caps the generated text per kind and
 * size (in characters); the corpus is taken whole unless `corpusLimit` says otherwise.
 */
export function benchTexts({ perKind = 150_000, corpusLimit = Infinity } = {}) {
  const texts = [];
  let corpusChars = 0;
  for (const trace of traces()) {
    for (const m of trace.messages) {
      const parts = [typeof m.content === 'string' ? m.content : '', ...(m.tool_calls ?? []).map((c) => c.function?.arguments ?? '')];
      for (const text of parts) {
        if (text.length === 0 || corpusChars >= corpusLimit) continue;
        corpusChars += text.length;
        texts.push({ kind: 'corpus', text });
      }
    }
  }
  const shared = join(root, '..', 'shared');
  const sources = {
    prose: readTree(join(shared, 'research'), '.md') + readTree(join(shared, 'seeds'), '.md'),
    code: readTree(join(root, 'src'), '.rs') + readTree(join(root, 'js'), '.ts'),
    json: existsSync(join(root, 'package-lock.json')) ? readFileSync(join(root, 'package-lock.json'), 'utf8') : '',
    cjk: cjkText(perKind),
  };
  for (const [kind, text] of Object.entries(sources)) {
    for (const size of [100, 1000, 10_000, 100_000]) {
      for (const piece of cut(text, size, perKind)) texts.push({ kind, text: piece });
    }
  }
  for (const t of texts) {
    const bytes = Buffer.byteLength(t.text);
    t.bytes = bytes;
    t.bucket = BUCKETS.find((b) => bytes >= b.min && bytes < b.max).name;
  }
  return texts;
}

/** A fixed ~1 KB English prose message (the cold-start text). */
export const KB_TEXT = (
  'The engine keeps an agent conversation inside its context window. Every message is counted once, ' +
  'when it is added, and the total is a running sum, so checking the budget costs nothing. When the ' +
  'budget is exceeded, a pass runs the cheapest strategies first: large tool results are truncated ' +
  "and their originals offloaded to the host's store, old rounds are summarized by the host's own model, " +
  'and nothing is ever lost, because every replaced span can be reloaded by the uuid in its marker. '
).repeat(2);
