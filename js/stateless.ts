/**
 * The stateless API, for request handlers that keep no memory between requests: one-shot
 * `compress`, reloads from the store alone, `validate` and `countTokens`.
 *
 * @module
 */

import { countTokens as wasmCountTokens, handleReloadCallIn, reloadOffload, validateMessages } from './wasm/autocontext.js';
import type { WasmStore } from './wasm/autocontext.js';
import { AutoContextError, call, callAsync, describe } from './errors.js';
import { isCount, makeHost, splitOptions, toJson } from './host.js';
import { AutoContextMemory, oneShot, release } from './memory.js';
import { DEFAULT_STORE_TIMEOUT_MS } from './timed-store.js';
import { wireReplacer } from './wire.js';
import type {
  AutoContextOptions,
  CompressOutput,
  FormatName,
  MessageFor,
  OffloadStore,
  ReloadCallFor,
  StandaloneReloadOptions,
  TokenCounterFn,
  TokenizerName,
  ValidateOptions,
  ValidationProblem,
} from './types.js';

/**
 * Compresses a list of messages in one call, for request handlers that keep no memory between
 * requests. Returns the compressed list, what the pass did, and the store holding the
 * originals of whatever was replaced: the offloads the compressed list names, and nothing else
 * (the log of everything added, which a memory keeps in its store, would be out of reach once
 * the call returns, so it is not written).
 */
export async function compress<F extends FormatName = 'openai', M extends object = MessageFor<F>>(
  messages: readonly NoInfer<M>[],
  options: AutoContextOptions<F, NoInfer<M>> = {},
): Promise<CompressOutput<M>> {
  const memory = new AutoContextMemory<F, M>(options);
  try {
    oneShot(memory as unknown as AutoContextMemory<FormatName, never>);
    memory.add(messages);
    const result = await memory.compressIfNeeded();
    return { ...result, messages: memory.messages(), store: memory.store, sessionId: memory.sessionId, offloads: memory.offloads() };
  } finally {
    // Freed now rather than by a finalizer at some later, unrelated moment: a request handler
    // calling compress() on every request would otherwise grow the module's memory until the
    // garbage collector runs, and pay for the frees inside later requests.
    release(memory as unknown as AutoContextMemory<FormatName, never>);
  }
}

/** The options of the standalone {@link reload} and {@link handleReloadCall}. */
function reloadParts(store: unknown, sessionId: unknown, options: unknown): { store: WasmStore; json: string } {
  if (typeof sessionId !== 'string') {
    throw new AutoContextError('INVALID_ARGUMENT', `sessionId must be a string, got ${describe(sessionId)}`, { field: 'sessionId' });
  }
  const { json } = splitOptions(options ?? {});
  const { wasm } = makeHost({ store: store as OffloadStore }, () => storeTimeout(options));
  return { store: wasm.store, json };
}

function storeTimeout(options: unknown): number {
  const ms = (options as { storeTimeoutMs?: unknown } | null | undefined)?.storeTimeoutMs;
  return typeof ms === 'number' && ms >= 0 ? ms : DEFAULT_STORE_TIMEOUT_MS;
}

/**
 * The original messages of an offload, from the store alone: for offloads {@link compress}
 * wrote, when no memory is left to ask. The payload under `<sessionId>/<uuid>` must name this
 * session and uuid, be in `options.format` when given, and hold messages that read in it; with
 * `options.offloads` (what `compress()` returned) the uuid must be one of them and the payload
 * must be byte for byte the one written, as a memory checks it.
 *
 * @throws {@link AutoContextError} `INVALID_ARGUMENT` for a malformed uuid, `NOT_FOUND` when
 *   there is no such offload, `STORE_FAILED` when the store fails or holds anything else there.
 */
export async function reload<F extends FormatName = 'openai', M extends object = MessageFor<F>>(
  store: OffloadStore,
  sessionId: string,
  uuid: string,
  options: StandaloneReloadOptions<F> = {},
): Promise<M[]> {
  if (typeof uuid !== 'string') {
    throw new AutoContextError('INVALID_ARGUMENT', `uuid must be a string, got ${describe(uuid)}`, { field: 'uuid' });
  }
  const { store: wasmStore, json } = reloadParts(store, sessionId, options);
  const text = await callAsync(() => reloadOffload(wasmStore as never, sessionId, uuid, json));
  return JSON.parse(text) as M[];
}

/**
 * Executes the model's `context_reload` call from the store alone, as
 * {@link AutoContextMemory.handleReloadCall} does for a memory: for request handlers that
 * compress with {@link compress} and keep no memory. Pass the options given to `compress()`
 * (their `format` reads the call's shape; `offloadReloadLimit` sizes the pages) and, to have
 * each payload checked against its digest, the `offloads` it returned. An unknown uuid is
 * answered in the text, for the model to read.
 *
 * @throws {@link AutoContextError} `STORE_FAILED` when the store fails or holds something else
 *   under the key; `INVALID_CONFIG` for bad options.
 */
export async function handleReloadCall<F extends FormatName = 'openai'>(
  store: OffloadStore,
  sessionId: string,
  toolCall: ReloadCallFor<F>,
  options: StandaloneReloadOptions<F> = {},
): Promise<string> {
  const { store: wasmStore, json } = reloadParts(store, sessionId, options);
  const call = toJson(toolCall, 'INVALID_ARGUMENT', 'the reload call');
  return callAsync(() => handleReloadCallIn(wasmStore as never, sessionId, call, json));
}

/**
 * Problems a provider would reject a list of messages for: messages that cannot be read,
 * broken tool pairing (every format), turns that do not alternate, tool results not first in
 * their message, assistant messages of only thinking, empty content (Anthropic), approval
 * responses nobody asked for (AI SDK), content parts of a type the role does not take and
 * reasoning items cut from their response (Responses API). Empty when the list is valid.
 *
 * By default the calls of the last exchange may still wait for their results (a working list
 * whose tools are running). With `{ request: true }` the list is checked as a complete request
 * body, as you send it: every call answered, and, for Anthropic, the user's turn first
 * (`FIRST_NOT_USER`). A summarize request's `messages` with your instruction appended passes it.
 */
export function validate(messages: readonly unknown[], format: FormatName = 'openai', options: ValidateOptions = {}): ValidationProblem[] {
  const json = toJson(messages, 'INVALID_MESSAGE', 'messages', wireReplacer);
  const request = options !== null && typeof options === 'object' && options.request === true;
  return JSON.parse(call(() => validateMessages(json, String(format), request))) as ValidationProblem[];
}

/**
 * Tokens in a text, with a built-in tokenizer or the host's own counter. The default is the
 * build's own: `o200k_base` (`autocontext`, `autocontext/full`), `estimate` (`autocontext/lite`).
 *
 * @throws {@link AutoContextError} `INVALID_ARGUMENT` for a non-string text, `INVALID_CONFIG`
 *   for an unknown tokenizer or one this build lacks (the message names the import that has it),
 *   `TOKENIZER_FAILED` when a counter function misbehaves.
 */
export function countTokens(text: string, tokenizer?: TokenizerName | TokenCounterFn): number {
  if (typeof text !== 'string') {
    throw new AutoContextError('INVALID_ARGUMENT', `text must be a string, got ${describe(text)}`, { field: 'text' });
  }
  if (typeof tokenizer === 'function') {
    let n: unknown;
    try {
      n = tokenizer(text);
    } catch (e) {
      throw new AutoContextError('TOKENIZER_FAILED', 'the tokenizer function failed', { cause: e });
    }
    if (!isCount(n)) {
      throw new AutoContextError('TOKENIZER_FAILED', `the tokenizer function must return a finite, non-negative number, got ${describe(n)}`);
    }
    return Math.ceil(n);
  }
  return call(() => wasmCountTokens(text, tokenizer === undefined ? undefined : String(tokenizer)));
}

