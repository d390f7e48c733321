// @ts-check
/**
 * What a session's requests cost, the same for the command line's bill, the demo's and the cost
 * benchmark's (bench/cost): how much of each request a provider's prompt cache serves, whether it
 * rewrote the previous request, whether it fits the window, sends the newest message, and which
 * originals survive. Pure functions of the requests and a token counter, so that a bug here,
 * which would skew every figure silently, is caught by bench/cost/accounting.test.mjs. Plain
 * JavaScript, so that the benchmark and its test run without a build.
 *
 * The model (see docs/benchmarks.md): per model call, `prefix` is the tokens of the longest
 * common prefix, message by message, with the previous request, `rest` the remaining tokens.
 *   plain cost                = prefix + rest
 *   cache-aware (Anthropic)   = 0.1 × prefix + 1.25 × rest   (cache read, cache write)
 *   cache-aware (OpenAI)      = 0.1 × prefix + rest          (cached input at a tenth, current models)
 * A prompt rewrite is a request that does not extend the previous one (a message before its
 * end changed or went away).
 *
 * @module
 */

/** Tokens every message costs besides its content (OpenAI's accounting: 3 per message plus the role). */
export const MESSAGE_OVERHEAD = 4;
/** Tokens a tool call or a tool result costs besides its text (id, name and framing). */
export const TOOL_BLOCK_OVERHEAD = 3;
/** Tokens every request costs once (the reply's priming). */
export const REQUEST_OVERHEAD = 3;
/** Fixed count of an image, audio or file part (OpenAI bills a low-detail image at 85). */
export const OPAQUE_PART_TOKENS = 85;

/**
 * What a provider bills per input token, as a multiple of its base input price: a token of the
 * cached prefix (`read`) and any other (`write`: Anthropic bills writing the cache at 1.25×).
 * OpenAI's current models (GPT-5.x) read cached input at 0.1×, its older ones at 0.25× to 0.5×.
 */
export const PRICES = {
  anthropic: { read: 0.1, write: 1.25 },
  openai: { read: 0.1, write: 1 },
};

/** @typedef {keyof typeof PRICES} Provider */
/** @typedef {(text: string) => number} CountText */
/** @typedef {Record<string, any>} Message */

/**
 * Tokens of one OpenAI chat message with `countText` (a plain o200k count of a string): its
 * text parts, a fixed count per other part, each tool call's name and arguments, a tool
 * result's framing, and the per-message overhead. The engine's own accounting, so the figures
 * of autocontext's systems can be checked against its `tokenCount()`.
 */
/**
 * @param {Message} m
 * @param {CountText} countText
 * @returns {number}
 */
export function messageTokens(m, countText) {
  let n = MESSAGE_OVERHEAD;
  const c = m.content;
  if (typeof c === 'string') n += countText(c);
  else if (Array.isArray(c)) {
    for (const part of c) {
      const text = part?.type === 'text' || part?.type === 'input_text' || part?.type === 'output_text' ? part.text : part?.type === 'refusal' ? part.refusal : undefined;
      n += typeof text === 'string' ? countText(text) : OPAQUE_PART_TOKENS;
    }
  }
  for (const call of m.tool_calls ?? []) n += TOOL_BLOCK_OVERHEAD + countText(call.function?.name ?? '') + countText(call.function?.arguments ?? '');
  if (m.role === 'tool') n += TOOL_BLOCK_OVERHEAD;
  return n;
}

/**
 * Tokens of a whole request: its messages plus the request overhead.
 * @param {Message[]} messages
 * @param {CountText} countText
 * @returns {number}
 */
export function requestTokens(messages, countText) {
  return messages.reduce((s, m) => s + messageTokens(m, countText), REQUEST_OVERHEAD);
}

/**
 * JSON with object keys sorted: equal for deep-equal messages whatever their key order.
 * @param {unknown} value
 * @returns {string}
 */
export function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const o = /** @type {Record<string, unknown>} */ (value);
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * Number of leading entries equal in `a` and `b` (message keys).
 * @param {readonly string[]} a
 * @param {readonly string[]} b
 */
export function commonPrefix(a, b) {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * The cost of one request given its cached prefix, under each pricing.
 * @param {number} prefix tokens of the cached prefix
 * @param {number} total tokens of the whole request
 */
export function turnCost(prefix, total) {
  const rest = total - prefix;
  return {
    plain: total,
    anthropic: PRICES.anthropic.read * prefix + PRICES.anthropic.write * rest,
    openai: PRICES.openai.read * prefix + PRICES.openai.write * rest,
  };
}

/**
 * The text of a message's content (text parts joined), for matching a message that was cut.
 * @param {Message | undefined} m
 * @returns {string}
 */
function contentText(m) {
  if (typeof m?.content === 'string') return m.content;
  if (Array.isArray(m?.content)) return m.content.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('');
  return '';
}

/** A one-line bracketed header, then a blank line, at the start of a text. */
const HEADER = /^\[[^\n\]]*\]\n\n/;

/**
 * Whether a request sends the newest message (the last one added before this model call):
 * `verbatim` when its last message is that message unchanged, `sent` when its last message is
 * that message at least in part (the same role, the same tool call answered, the same first 64
 * characters, maybe after a one-line bracketed header and a blank line: a long tool result cut
 * to its head and tail, or under a header such as `[Truncated: 1 block, ~3,410 tokens]`, still
 * counts as sent).
 */
/**
 * @param {Message[]} request
 * @param {Message | undefined} newest
 */
export function newestSent(request, newest) {
  const last = request.at(-1);
  if (last === undefined || newest === undefined) return { sent: newest === undefined, verbatim: newest === undefined };
  if (canonical(last) === canonical(newest)) return { sent: true, verbatim: true };
  const sameCall = newest.role !== 'tool' || last.tool_call_id === newest.tool_call_id;
  const head = contentText(newest).slice(0, 64);
  const text = contentText(last);
  const header = HEADER.exec(text);
  const sent = last.role === newest.role && sameCall && (text.startsWith(head) || (header !== null && text.slice(header[0].length).startsWith(head)));
  return { sent, verbatim: false };
}

/**
 * Whether a request has nothing but system messages (a provider refuses it, or it asks nothing).
 * @param {Message[]} request
 */
export function isEmptyRequest(request) {
  return !request.some((m) => m.role !== 'system' && m.role !== 'developer');
}

/**
 * The originals (every message of the trace) a system can still give back: sent verbatim in
 * its last request, or reloadable from its own store. Each list holds OpenAI messages; they are
 * matched by canonical JSON, each sent or reloaded copy standing for one original at most.
 */
/**
 * @param {Message[]} originals
 * @param {Message[]} sent
 * @param {Message[]} [reloaded]
 */
export function recoverable(originals, sent, reloaded = []) {
  const pool = new Map();
  for (const m of [...sent, ...reloaded]) {
    const k = canonical(m);
    pool.set(k, (pool.get(k) ?? 0) + 1);
  }
  let n = 0;
  for (const m of originals) {
    const k = canonical(m);
    const left = pool.get(k) ?? 0;
    if (left > 0) {
      n++;
      pool.set(k, left - 1);
    }
  }
  return { originals: originals.length, recoverable: n };
}

/**
 * @typedef {object} LedgerOptions
 * @property {number} window the model's context window: a request above it is over the window
 * @property {CountText} [countText] counts a text; a message costs {@link messageTokens} of it
 * @property {(message: Message) => number} [messageTokens] counts a whole message instead (a
 *   format other than OpenAI chat: the engine's own count)
 * @property {(request: Message[]) => unknown[]} [validate] the problems of a request, if any
 */

/**
 * One accounted model call.
 * @typedef {object} TurnRecord
 * @property {number} tokens tokens of the request
 * @property {number} messages messages in it
 * @property {number} prefixMessages leading messages the previous request had too (the cached prefix)
 * @property {number} prefixTokens their tokens
 * @property {boolean} rewrite whether the request does not extend the previous one
 * @property {number | null} firstChanged the index of its first changed message, when a rewrite
 */

/**
 * The per-trace ledger of one system: call `turn()` with each request in order. It memoizes
 * message keys (by object) and token counts (by key), so a message sent on every turn is
 * serialized and counted once per distinct object and once per distinct content.
 */
export class Ledger {
  /** @param {LedgerOptions} options */
  constructor({ countText, messageTokens: count, window, validate }) {
    if (count === undefined && countText === undefined) throw new TypeError('Ledger: countText or messageTokens is required');
    /** @type {(message: Message) => number} */
    this.count = count ?? ((m) => messageTokens(m, /** @type {CountText} */ (countText)));
    this.window = window;
    this.validate = validate;
    /** @type {WeakMap<object, string>} */
    this.keyOf = new WeakMap();
    /** @type {Map<string, number>} */
    this.tokensOf = new Map();
    /** @type {{ keys: string[] } | null} */
    this.previous = null;
    /** @type {TurnRecord[]} */
    this.turns = [];
    this.totals = {
      turns: 0,
      plain: 0,
      anthropic: 0,
      openai: 0,
      cachedTokens: 0,
      rewrites: 0,
      overWindow: 0,
      invalid: 0,
      empty: 0,
      newestDropped: 0,
      newestAltered: 0,
      maxTokens: 0,
    };
    /** @type {{ turn: number, empty: boolean, problems: unknown[] }[]} */
    this.invalidExamples = [];
  }

  /** @param {Message} m */
  key(m) {
    let k = this.keyOf.get(m);
    if (k === undefined) {
      k = JSON.stringify(m);
      this.keyOf.set(m, k);
    }
    return k;
  }

  /**
   * @param {Message} m
   * @param {string} key
   */
  tokens(m, key) {
    let n = this.tokensOf.get(key);
    if (n === undefined) {
      n = this.count(m);
      this.tokensOf.set(key, n);
    }
    return n;
  }

  /**
   * Accounts one model call; `newest` is the last message added before it. Returns the turn's record.
   * @param {Message[]} request
   * @param {Message} [newest]
   * @returns {TurnRecord}
   */
  turn(request, newest) {
    const keys = request.map((m) => this.key(m));
    const sizes = request.map((m, i) => this.tokens(m, keys[i]));
    const total = sizes.reduce((a, b) => a + b, REQUEST_OVERHEAD);
    const prev = this.previous;
    const p = prev === null ? 0 : commonPrefix(prev.keys, keys);
    let prefixTokens = 0;
    for (let i = 0; i < p; i++) prefixTokens += sizes[i];
    const rewrite = prev !== null && p < prev.keys.length;
    const cost = turnCost(prefixTokens, total);
    const empty = isEmptyRequest(request);
    const problems = this.validate ? this.validate(request) : [];
    const invalid = empty || problems.length > 0;
    const newestCheck = newestSent(request, newest);
    const t = this.totals;
    t.turns++;
    t.plain += cost.plain;
    t.anthropic += cost.anthropic;
    t.openai += cost.openai;
    t.cachedTokens += prefixTokens;
    if (rewrite) t.rewrites++;
    if (total > this.window) t.overWindow++;
    if (invalid) {
      t.invalid++;
      if (empty) t.empty++;
      if (this.invalidExamples.length < 3) this.invalidExamples.push({ turn: t.turns - 1, empty, problems: problems.slice(0, 2) });
    }
    if (!newestCheck.sent) t.newestDropped++;
    else if (!newestCheck.verbatim) t.newestAltered++;
    t.maxTokens = Math.max(t.maxTokens, total);
    const record = { tokens: total, messages: request.length, prefixMessages: p, prefixTokens, rewrite, firstChanged: rewrite ? p : null };
    this.turns.push(record);
    this.previous = { keys };
    return record;
  }
}
