/**
 * The offline summarizer: a deterministic, extractive `summarize` function that needs no model
 * and no network.
 *
 * ```js
 * import { AutoContextMemory, offlineSummarize } from 'autocontext';
 *
 * const memory = new AutoContextMemory({ maxToken: 32_000, summarize: offlineSummarize });
 * ```
 *
 * It keeps, within the request's target length, the lines of the span that carry facts: the
 * user's requests, one line per tool call with its key arguments and how it ended, error
 * messages and the ends of stack traces, file paths, commands, identifiers, numbers, decisions,
 * and every line of an earlier summary being merged. Repeated lines are written once. Its
 * summaries are always shorter than what they replace, so the engine's summarizing steps
 * shrink the conversation even with no model at hand. Use it for command-line runs, demos and
 * tests, or as a fallback when the host's model is down:
 *
 * ```js
 * const summarize = async (request) => {
 *   try { return await callMyModel(request); } catch { return offlineSummarize(request); }
 * };
 * ```
 *
 * @module
 */

import { offlineSummarize as wasmOfflineSummarize } from './wasm/autocontext.js';
import { AutoContextError, call } from './errors.js';
import type { SummarizeRequest } from './types.js';

/** The part of a {@link SummarizeRequest} the offline summarizer reads. */
export type OfflineSummarizeRequest = Pick<SummarizeRequest, 'prompt'> & Partial<Pick<SummarizeRequest, 'kind' | 'system' | 'targetChars'>>;

/**
 * Summarizes the span of a summarize request offline, deterministically: the same request
 * always gives the same text. Usable directly as the `summarize` option.
 *
 * @param request - the request the engine handed to `summarize` (only `prompt`, `kind`,
 *   `system` and `targetChars` are read).
 * @returns the summary text (empty only for an empty span).
 * @throws {@link AutoContextError} `INVALID_ARGUMENT` when the request has no string `prompt`.
 */
export function offlineSummarize(request: OfflineSummarizeRequest): string {
  if (request === null || typeof request !== 'object') {
    throw new AutoContextError('INVALID_ARGUMENT', `the summarize request must be an object with a prompt, got ${request === null ? 'null' : typeof request}`, {
      field: 'request',
    });
  }
  const { kind, system, prompt, targetChars } = request;
  const json = JSON.stringify({ kind, system, prompt, targetChars: Number.isFinite(targetChars) ? targetChars : undefined });
  return call(() => wasmOfflineSummarize(json));
}
