/**
 * The one error type of autocontext.
 *
 * Every failure the package reports is an {@link AutoContextError} with a stable `code`. When the
 * host failed (its summarize function, its store, its token counter), `cause` is exactly what the
 * host threw, unchanged.
 *
 * @module
 */

// generated:error-codes (tests/generated.rs writes this part from src/error.rs; edit it there)
/** The stable error codes; hosts may switch on them. */
export type ErrorCode =
  | 'INVALID_CONFIG'
  | 'INVALID_MESSAGE'
  | 'INVALID_ARGUMENT'
  | 'INVALID_STATE'
  | 'NOT_FOUND'
  | 'STORE_FAILED'
  | 'SUMMARIZE_FAILED'
  | 'TOKENIZER_FAILED'
  | 'LIMIT_EXCEEDED'
  | 'CONFLICT'
  | 'UNAVAILABLE';
// end generated:error-codes

/** Where an {@link AutoContextError} happened and what caused it. */
export interface AutoContextErrorOptions {
  /** Index of the offending message in the conversation, when one message was at fault. */
  index?: number;
  /** Name of the offending field or option, when one was at fault. */
  field?: string;
  /** What the host threw, when the host failed. */
  cause?: unknown;
}

/**
 * An error reported by autocontext.
 *
 * ```js
 * try { memory.add({ role: 'robot', content: 'hi' }); }
 * catch (e) { if (isAutoContextError(e)) console.log(e.code, e.index, e.field); }
 * ```
 */
export class AutoContextError extends Error {
  /** The stable code. */
  readonly code: ErrorCode;
  /** Index of the offending message, when one message was at fault. */
  readonly index?: number;
  /** Name of the offending field or option, when one was at fault. */
  readonly field?: string;

  /**
   * @param code - the stable code
   * @param message - what was wrong, and where
   * @param options - location and the host's own error
   */
  constructor(code: ErrorCode, message: string, options: AutoContextErrorOptions = {}) {
    super(message, 'cause' in options ? { cause: options.cause } : undefined);
    this.name = 'AutoContextError';
    this.code = code;
    if (options.index !== undefined) this.index = options.index;
    if (options.field !== undefined) this.field = options.field;
  }
}

/** Whether `value` is an {@link AutoContextError} (optionally with the given code). */
export function isAutoContextError(value: unknown, code?: ErrorCode): value is AutoContextError {
  return value instanceof AutoContextError && (code === undefined || value.code === code);
}

/**
 * Converts what the WebAssembly engine threw into an {@link AutoContextError}, keeping code,
 * message, index, field and cause. Anything else is returned as it was.
 *
 * @internal
 */
export function fromWasm(thrown: unknown): unknown {
  if (thrown instanceof AutoContextError) return thrown;
  if (!(thrown instanceof Error) || thrown.name !== 'AutoContextError') return thrown;
  const e = thrown as Error & { code?: unknown; index?: unknown; field?: unknown };
  const options: AutoContextErrorOptions = {};
  if (typeof e.index === 'number') options.index = e.index;
  if (typeof e.field === 'string') options.field = e.field;
  if ('cause' in e) options.cause = e.cause;
  return new AutoContextError(String(e.code) as ErrorCode, e.message, options);
}

/**
 * Runs `fn`, re-throwing engine errors as {@link AutoContextError}s.
 *
 * @internal
 */
export function call<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw fromWasm(e);
  }
}

/**
 * Awaits `promise`, re-throwing engine errors as {@link AutoContextError}s.
 *
 * @internal
 */
export async function callAsync<T>(promise: () => Promise<T>): Promise<T> {
  try {
    return await promise();
  } catch (e) {
    throw fromWasm(e);
  }
}

/**
 * A short description of a value's type, for error messages ("null", "an array", "a string").
 *
 * @internal
 */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  const t = typeof value;
  return t === 'object' ? 'an object' : t === 'undefined' ? 'undefined' : `a ${t}`;
}

/**
 * An `INVALID_ARGUMENT` error about `field`.
 *
 * @internal
 */
export function invalidArgument(field: string, message: string): AutoContextError {
  return new AutoContextError('INVALID_ARGUMENT', message, { field });
}
