/**
 * The host's side of the engine: the options split into the engine's JSON and the host's
 * pieces (summarize function, store, token counter, diagnostics), each checked, and adapted to
 * what the WebAssembly engine calls. What the host's functions throw passes through unchanged,
 * as the `cause` of the error the engine reports.
 *
 * @module
 * @internal
 */

import type { WasmHost } from './wasm/autocontext.js';
import { AutoContextError, describe, isAutoContextError, type ErrorCode } from './errors.js';
import { checkDiagnostics, Diagnostics } from './diagnostics.js';
import { MemoryStore } from './stores/memory.js';
import { timedStore } from './timed-store.js';
import type { HostOptions, OffloadStore, SummarizeFn, SummarizeRequest } from './types.js';

// generated:host-keys (tests/generated.rs writes this part from src/options/mod.rs; edit it there)
/** The options JavaScript takes with the host's pieces; the engine gets the others. */
const HOST_KEYS = new Set(['tokenizer', 'summarize', 'store', 'onEvent', 'logger', 'logLevel']);
// end generated:host-keys

/** Options may not hide bad values: NaN, Infinity, functions and BigInts reach the engine as text it names. */
function optionsReplacer(_key: string, value: unknown): unknown {
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return `[function ${value.name || 'anonymous'}]`;
  if (typeof value === 'symbol') return String(value);
  return value;
}

/** JSON text of user input; what JSON cannot hold becomes an {@link AutoContextError} with `code`. */
export function toJson(value: unknown, code: ErrorCode, what: string, replacer?: (this: unknown, key: string, value: unknown) => unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value, replacer);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new AutoContextError(code, `${what} cannot be converted to JSON: ${why}`, { cause: e });
  }
  if (text === undefined) throw new AutoContextError(code, `${what} cannot be converted to JSON (got ${describe(value)})`);
  return text;
}

export function configError(field: string, message: string): AutoContextError {
  return new AutoContextError('INVALID_CONFIG', `option \`${field}\` ${message}`, { field });
}

/**
 * Normalizes what the host's summarize function returned into the engine's JSON answer. For a
 * request with a `schema`, the structured object itself (what a structured-output call returns)
 * is an answer too.
 */
function summaryJson(out: unknown, structured = false): string {
  if (typeof out === 'string') return JSON.stringify({ text: out });
  if (structured && out !== null && typeof out === 'object' && !('text' in out)) {
    return JSON.stringify({ text: toJson(out, 'SUMMARIZE_FAILED', 'the structured summary') });
  }
  if (out !== null && typeof out === 'object' && typeof (out as { text?: unknown }).text === 'string') {
    const { text, usage } = out as { text: string; usage?: unknown };
    const answer: { text: string; inputTokens?: number; outputTokens?: number } = { text };
    if (usage !== null && typeof usage === 'object') {
      const { inputTokens, outputTokens } = usage as { inputTokens?: unknown; outputTokens?: unknown };
      if (isCount(inputTokens)) answer.inputTokens = Math.round(inputTokens);
      if (isCount(outputTokens)) answer.outputTokens = Math.round(outputTokens);
    }
    return JSON.stringify(answer);
  }
  throw new AutoContextError(
    'SUMMARIZE_FAILED',
    `summarize must return a string or { text: string, usage? }, got ${describe(out)}`,
  );
}

export function isCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isFinite(n) && n >= 0;
}

/** The longest delay setTimeout honours. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Adapts the user's summarize function to the engine's: JSON request in, JSON answer out, with
 * an AbortSignal that fires when the engine's timeout passes. What the user's function throws
 * passes through unchanged.
 */
function adaptSummarize(fn: SummarizeFn<never>, diag: Diagnostics): (requestJson: string) => Promise<string> {
  const summarize = answerSummary(fn);
  return async (requestJson) => {
    try {
      return await summarize(requestJson);
    } catch (e) {
      if (diag.active) {
        const kind = (JSON.parse(requestJson) as { kind?: SummarizeRequest['kind'] }).kind;
        const error = isAutoContextError(e, 'SUMMARIZE_FAILED')
          ? e
          : new AutoContextError('SUMMARIZE_FAILED', `summarize threw for a ${kind ?? ''} request`, { cause: e });
        const why = e instanceof Error ? e.message : describe(e);
        diag.emit({ type: 'summarize-failed', level: 'warn', kind, error, message: `summarize failed (${kind} request): ${why}; the span falls back to an offload or stays` });
      }
      throw e;
    }
  };
}

/** The summarize call itself: the user's function, its answer checked, bounded by the request's timeout. */
function answerSummary(fn: SummarizeFn<never>): (requestJson: string) => Promise<string> {
  return async (requestJson) => {
    const request = JSON.parse(requestJson) as Omit<SummarizeRequest, 'signal'>;
    const controller = new AbortController();
    const work = (async () => (fn as unknown as SummarizeFn)({ ...request, signal: controller.signal }))();
    const ms = request.timeoutMs;
    const structured = request.schema !== undefined;
    if (ms === undefined || !(ms >= 0 && ms <= MAX_TIMER_MS)) return summaryJson(await work, structured);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new AutoContextError('SUMMARIZE_FAILED', `summarize did not answer within ${ms} ms`);
        controller.abort(error);
        reject(error);
      }, ms);
    });
    try {
      return summaryJson(await Promise.race([work, timeout]), structured);
    } finally {
      clearTimeout(timer);
    }
  };
}

/**
 * JSON text of an error as a provider SDK throws it: own fields, and the usual ones of `Error`
 * subclasses (`message`, `code`, `status`, `error`, `body`, `responseBody`, `cause`, ...), to a
 * bounded depth, cycles and functions left out.
 */
export function errorJson(error: unknown): string {
  const seen = new WeakSet<object>();
  const FIELDS = ['name', 'message', 'code', 'type', 'status', 'statusCode', 'error', 'body', 'responseBody', 'data', 'cause', 'errors'];
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === 'bigint') return String(v);
    if (typeof v === 'string') return v.length > 200_000 ? v.slice(0, 200_000) : v;
    if (v === null || typeof v !== 'object') return typeof v === 'number' || typeof v === 'boolean' ? v : undefined;
    if (depth > 6 || seen.has(v)) return undefined;
    seen.add(v);
    if (Array.isArray(v)) return v.slice(0, 50).map((x) => walk(x, depth + 1));
    const out: Record<string, unknown> = {};
    const keys = new Set(Object.keys(v).slice(0, 100));
    if (v instanceof Error) for (const k of FIELDS) keys.add(k);
    for (const k of keys) {
      try {
        const x = walk((v as Record<string, unknown>)[k], depth + 1);
        if (x !== undefined) out[k] = x;
      } catch {
        // A throwing getter: left out.
      }
    }
    return out;
  };
  try {
    return JSON.stringify(walk(error, 0) ?? null);
  } catch {
    return JSON.stringify(String(error));
  }
}

/** Checks the host's pieces and builds what the engine calls. */
export function makeHost(host: HostOptions<never>, storeTimeoutMs: () => number, diag?: Diagnostics): { wasm: WasmHost; store: OffloadStore } {
  const store = host.store ?? new MemoryStore();
  for (const method of ['get', 'put', 'delete'] as const) {
    if (typeof store !== 'object' || typeof (store as unknown as Record<string, unknown>)[method] !== 'function') {
      throw configError('store', `must be an object with get, put and delete methods (its \`${method}\` is missing)`);
    }
  }
  if (host.summarize != null && typeof host.summarize !== 'function') {
    throw configError('summarize', `must be a function, got ${describe(host.summarize)}`);
  }
  const storeFailed = diag?.active
    ? (operation: 'get' | 'put' | 'delete', key: string, error: AutoContextError) => {
        const cause = error.cause instanceof Error ? `: ${error.cause.message}` : error.cause === undefined ? '' : `: ${describe(error.cause)}`;
        diag.emit({ type: 'store-failed', level: 'error', operation, key, error, message: `${error.message}${cause}` });
      }
    : undefined;
  const wasm: WasmHost = { store: timedStore(store, storeTimeoutMs, storeFailed) };
  if (typeof host.summarize === 'function') wasm.summarize = adaptSummarize(host.summarize, diag ?? new Diagnostics({ logLevel: 'off' }, () => ''));
  if (typeof host.tokenizer === 'function') wasm.countTokens = host.tokenizer;
  return { wasm, store };
}

/** Splits options into the engine's JSON and the host's pieces. */
export function splitOptions(options: unknown): { json: string; host: HostOptions<never> } {
  if (options === undefined) return { json: '{}', host: {} };
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new AutoContextError('INVALID_CONFIG', `options must be an object, got ${describe(options)}`);
  }
  const engine: Record<string, unknown> = {};
  const host: HostOptions<never> = {};
  for (const [key, value] of Object.entries(options)) {
    if (!HOST_KEYS.has(key)) engine[key] = value;
  }
  const o = options as HostOptions<never>;
  host.summarize = o.summarize;
  host.store = o.store;
  host.tokenizer = o.tokenizer;
  host.onEvent = o.onEvent;
  host.logger = o.logger;
  host.logLevel = o.logLevel;
  checkDiagnostics(host, configError);
  if (typeof o.tokenizer === 'function') engine.tokenizer = 'custom';
  else if (o.tokenizer !== undefined) engine.tokenizer = o.tokenizer;
  return { json: toJson(engine, 'INVALID_CONFIG', 'options', optionsReplacer), host };
}
