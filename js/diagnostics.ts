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

import type { AutoContextEvent, DiagnosticsOptions, Logger, LogLevel } from './types.js';

/** An event as a memory builds it, before the session id is added. */
export type UnsentEvent = AutoContextEvent extends infer E ? (E extends AutoContextEvent ? Omit<E, 'sessionId'> : never) : never;

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
