/**
 * Diagnostics: what a memory tells the host as it happens. Pulling `events()` and
 * `result.errors` after the fact is not enough to notice a summarizer failing with 401 on every
 * call, or a store timing out, so every compression, summarizer failure, store failure, refused
 * usage report and overflow is also pushed, as it happens, to the `onEvent` callback and to the
 * `logger`.
 *
 * Logging is silent unless asked for, like the official SDKs: the `logLevel` option, else the
 * `AUTOCONTEXT_LOG` environment variable (`debug`, `info`, `warn`, `error`, `off`; as `OPENAI_LOG`
 * is for the `openai` SDK), else `warn` when a `logger` is given and `off` when none is. The
 * environment is read where there is one (Node, Bun, Deno with `--allow-env`); Workers and
 * browsers have none and never fail for it.
 *
 * @module
 */

import type { AutoContextError } from './errors.js';
import type { CompressionEvent, SummarizeKind, UsageReport } from './types.js';

/** How much the logger is told, from the most to nothing. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'off';

/**
 * Where log lines go: `console`, or any object with some of its four methods (pino, winston
 * and most loggers fit). A missing method means that level is dropped.
 */
export interface Logger {
  /** Each pass's events one by one. */
  debug?(message: string, ...rest: unknown[]): void;
  /** A pass that changed the list. */
  info?(message: string, ...rest: unknown[]): void;
  /** A failed summary, a refused usage report, a pass over its target, an overflow. */
  warn?(message: string, ...rest: unknown[]): void;
  /** A failing store. */
  error?(message: string, ...rest: unknown[]): void;
}

/** What every event carries. */
interface EventBase {
  /** The memory's session id. */
  sessionId: string;
  /** The level the logger gets it at. */
  level: Exclude<LogLevel, 'off'>;
  /** One line for people (what the logger prints). */
  message: string;
}

/** A pass ran and changed the list, or could not reach its target. */
export interface PassEvent extends EventBase {
  /** Tells the events apart. */
  type: 'pass';
  /** Request tokens before the pass. */
  tokensBefore: number;
  /** Request tokens after it. */
  tokensAfter: number;
  /** The target it compressed towards. */
  targetTokens: number;
  /** Whether it reached the target (`level` is `'warn'` when not). */
  underTarget: boolean;
  /** The changes made, in order (each also comes as a `compression` event). */
  events: CompressionEvent[];
  /** Summarize calls the pass made. */
  summarizeCalls: number;
}

/** One change a pass committed. */
export interface CompressionNotice extends EventBase {
  /** Tells the events apart. */
  type: 'compression';
  /** The change, as `events()` lists it. */
  event: CompressionEvent;
}

/**
 * A summarize call failed: it threw or rejected (the host's error is `error.cause`), took
 * longer than `summarizeTimeoutMs`, or answered with nothing usable. Sent as it happens; the
 * pass goes on without that summary.
 */
export interface SummarizeFailedEvent extends EventBase {
  /** Tells the events apart. */
  type: 'summarize-failed';
  /** Which strategy asked, when known. */
  kind?: SummarizeKind;
  /** `SUMMARIZE_FAILED`, with what the summarize function threw as its `cause`. */
  error: AutoContextError;
}

/** A store call failed or timed out. The pass (or reload) that made it fails and changes nothing. */
export interface StoreFailedEvent extends EventBase {
  /** Tells the events apart. */
  type: 'store-failed';
  /** Which call. */
  operation: 'get' | 'put' | 'delete';
  /** Its key. */
  key: string;
  /** `STORE_FAILED`, with what the store threw as its `cause`. */
  error: AutoContextError;
}

/** `observeUsage` got a report it refused or clamped (see `UsageReport.status`). */
export interface UsageEvent extends EventBase {
  /** Tells the events apart. */
  type: 'usage-refused' | 'usage-clamped';
  /** The report `observeUsage` returned. */
  report: UsageReport;
}

/** `handleOverflow` read a "context too long" error and compacted. */
export interface OverflowEvent extends EventBase {
  /** Tells the events apart. */
  type: 'overflow';
  /** Whether sending again can succeed. */
  retry: boolean;
  /** Request tokens (estimated) before the compaction. */
  tokensBefore: number;
  /** Request tokens (estimated) after it. */
  tokensAfter: number;
}

/** Everything `onEvent` receives, told apart by `type`. */
export type AutoContextEvent = PassEvent | CompressionNotice | SummarizeFailedEvent | StoreFailedEvent | UsageEvent | OverflowEvent;

/** An event as a memory builds it, before the session id is added. */
export type UnsentEvent = AutoContextEvent extends infer E ? (E extends AutoContextEvent ? Omit<E, 'sessionId'> : never) : never;

/** The diagnostics options, JavaScript only (they never reach the engine). */
export interface DiagnosticsOptions {
  /**
   * Called with every event as it happens: each pass and each change it made, every failed
   * summarize call and store call, refused usage reports, overflows. What it throws or rejects
   * with is caught (and logged at `error`): it never breaks a pass.
   */
  onEvent?: (event: AutoContextEvent) => unknown;
  /** Where log lines go (default `console` once a level is set). */
  logger?: Logger;
  /**
   * How much is logged (default: `AUTOCONTEXT_LOG` from the environment, else `'warn'` with a
   * `logger` and `'off'` without).
   */
  logLevel?: LogLevel;
}

const LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'off'];
const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3, off: 4 };

function isLevel(v: unknown): v is LogLevel {
  return typeof v === 'string' && (LEVELS as readonly string[]).includes(v);
}

/** An environment variable where the runtime has an environment; `undefined` anywhere else. */
function readEnv(name: string): string | undefined {
  const g = globalThis as {
    process?: { env?: Record<string, string | undefined> };
    Deno?: { env?: { get?(name: string): string | undefined } };
  };
  try {
    if (g.process?.env !== undefined) return g.process.env[name]?.trim() || undefined;
    return g.Deno?.env?.get?.(name)?.trim() || undefined;
  } catch {
    // Deno without --allow-env, or a runtime whose environment throws: no environment.
    return undefined;
  }
}

/** Reads the three options; throws the error `invalid` makes for a wrong one. */
export function checkDiagnostics(options: DiagnosticsOptions, invalid: (field: string, message: string) => Error): void {
  if (options.onEvent != null && typeof options.onEvent !== 'function') {
    throw invalid('onEvent', `must be a function, got ${typeof options.onEvent}`);
  }
  if (options.logger != null && typeof options.logger !== 'object' && typeof options.logger !== 'function') {
    throw invalid('logger', `must be an object with debug, info, warn and error methods, such as console; got ${typeof options.logger}`);
  }
  if (options.logLevel !== undefined && !isLevel(options.logLevel)) {
    throw invalid('logLevel', `must be one of ${LEVELS.map((l) => `'${l}'`).join(', ')}, got ${JSON.stringify(options.logLevel)}`);
  }
}

/** Sends events to `onEvent` and the logger. */
export class Diagnostics {
  readonly #onEvent: ((event: AutoContextEvent) => unknown) | undefined;
  readonly #logger: Logger | undefined;
  readonly #rank: number;
  readonly #sessionId: () => string;

  /** `sessionId` is read when an event is sent (the memory's id is known only once it exists). */
  constructor(options: DiagnosticsOptions, sessionId: () => string) {
    this.#onEvent = typeof options.onEvent === 'function' ? options.onEvent : undefined;
    const env = readEnv('AUTOCONTEXT_LOG')?.toLowerCase();
    const level: LogLevel = options.logLevel ?? (isLevel(env) ? env : options.logger != null ? 'warn' : 'off');
    this.#rank = RANK[level];
    this.#logger = level === 'off' ? undefined : (options.logger ?? (globalThis as { console?: Logger }).console);
    this.#sessionId = sessionId;
  }

  /** Whether anyone listens (so callers can skip building events nobody reads). */
  get active(): boolean {
    return this.#onEvent !== undefined || this.#logger !== undefined;
  }

  /** Sends one event, built from its parts plus the session id. */
  emit(event: UnsentEvent): void {
    if (!this.active) return;
    let sessionId = '';
    try {
      sessionId = this.#sessionId();
    } catch {
      // A memory freed by compress() before a late store answer: no id to give.
    }
    const full = { ...event, sessionId } as unknown as AutoContextEvent;
    this.#log(full.level, `autocontext [${sessionId}] ${full.message}`, full);
    if (this.#onEvent === undefined) return;
    try {
      const out = this.#onEvent(full);
      if (out !== null && typeof out === 'object' && typeof (out as Promise<unknown>).then === 'function') {
        (out as Promise<unknown>).then(undefined, (e: unknown) => this.#callbackFailed(e));
      }
    } catch (e) {
      this.#callbackFailed(e);
    }
  }

  #callbackFailed(e: unknown): void {
    this.#log('error', `autocontext: onEvent threw; the event was dropped for it and the memory went on`, e);
  }

  #log(level: Exclude<LogLevel, 'off'>, line: string, detail: unknown): void {
    const logger = this.#logger;
    if (logger === undefined || RANK[level] < this.#rank) return;
    try {
      const method = (logger as Record<string, unknown>)[level];
      if (typeof method === 'function') method.call(logger, line, detail);
    } catch {
      // A logger that throws is not worth failing a pass for.
    }
  }
}

/** `n` with thousands separators, the same in every runtime and locale. */
export function count(n: number): string {
  return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}
