/**
 * A summarize function backed by any OpenAI-compatible chat-completions endpoint, called with
 * `fetch` (no SDK, no Node APIs: it runs in Node, browsers, Deno and Workers alike).
 *
 * ```js
 * const summarize = openaiSummarizer({ baseURL: 'http://127.0.0.1:11434/v1', model: 'llama3.1', apiKey });
 * ```
 *
 * Errors say what to fix. When the endpoint cannot be used at all (unreachable, refused
 * credentials, no such route or model, an answer that is not a chat completion) the error is a
 * {@link SummarizerUnavailable}, which a caller may treat as fatal; other failures (a rate
 * limit, a server error) are plain errors after which the engine falls back to a step without
 * a model.
 *
 * @module
 */

import type { SummarizeFn, SummarizeRequest } from '../types.js';

/** The endpoint cannot be used: retrying the next span will not help. */
export class SummarizerUnavailable extends Error {
  override name = 'SummarizerUnavailable';
}

/** Options of {@link openaiSummarizer}. */
export interface OpenAISummarizerOptions {
  /** The API's base URL, e.g. `https://api.openai.com/v1` (`/chat/completions` is appended). */
  baseURL: string;
  /** The model name sent with each request. */
  model: string;
  /** Sent as `Authorization: Bearer <apiKey>` when given. */
  apiKey?: string;
  /** The fetch to use; default `globalThis.fetch`. */
  fetch?: typeof fetch;
}

/** The endpoint that answers chat completions under `baseURL`. */
export function chatCompletionsURL(baseURL: string): string {
  return `${baseURL.trim().replace(/\/+$/, '')}/chat/completions`;
}

/** Why a fetch failed, in words (Node puts the system error in `cause`). */
function unreachableReason(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  switch (cause?.code) {
    case 'ECONNREFUSED':
      return 'connection refused (is the server running?)';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return 'the connection timed out';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'the connection was closed';
  }
  return cause?.message ?? (e instanceof Error ? e.message : String(e));
}

/** The `error.message` of an OpenAI-style error body, or its first line. */
function errorDetail(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof parsed.error === 'string') return parsed.error;
    if (typeof parsed.error?.message === 'string') return parsed.error.message;
    if (typeof parsed.message === 'string') return parsed.message;
  } catch {
    // not JSON
  }
  const first = body.trim().split('\n')[0] ?? '';
  return first.length > 200 ? `${first.slice(0, 200)}…` : first;
}

const HINTS: Record<number, string> = {
  401: ' (check the API key: OPENAI_API_KEY)',
  403: ' (check the API key and its permissions)',
  404: ' (check OPENAI_BASE_URL, which usually ends in /v1, and the model name)',
};

/**
 * A `summarize` function that sends each request to an OpenAI-compatible endpoint: the
 * request's `system` as the system message, its `prompt` as the user message. It returns the
 * answer's text and the token usage the endpoint reported.
 */
export function openaiSummarizer(options: OpenAISummarizerOptions): SummarizeFn {
  const url = chatCompletionsURL(options.baseURL);
  const doFetch = options.fetch ?? globalThis.fetch;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  return async (request: SummarizeRequest) => {
    const body = JSON.stringify({
      model: options.model,
      messages: [
        { role: 'system', content: request.system },
        { role: 'user', content: request.prompt },
      ],
    });
    let response: Response;
    try {
      response = await doFetch(url, { method: 'POST', headers, body, signal: request.signal });
    } catch (e) {
      if (request.signal?.aborted) throw e;
      throw new SummarizerUnavailable(`cannot reach the summarizer at ${url}: ${unreachableReason(e)}`, { cause: e });
    }
    const text = await response.text();
    if (!response.ok) {
      const detail = errorDetail(text);
      const message = `the summarizer at ${url} answered ${response.status}${response.statusText ? ` ${response.statusText}` : ''}${detail ? `: ${detail}` : ''}${HINTS[response.status] ?? ''}`;
      if (response.status in HINTS) throw new SummarizerUnavailable(message);
      throw new Error(message);
    }
    let answer: { choices?: { message?: { content?: unknown } }[]; usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } };
    try {
      answer = JSON.parse(text);
    } catch {
      throw new SummarizerUnavailable(`the summarizer at ${url} did not answer with JSON (is this a chat-completions endpoint?): ${errorDetail(text)}`);
    }
    const content = answer?.choices?.[0]?.message?.content;
    if (typeof content !== 'string') {
      throw new SummarizerUnavailable(`the summarizer at ${url} answered without choices[0].message.content (is this a chat-completions endpoint?)`);
    }
    const usage: { inputTokens?: number; outputTokens?: number } = {};
    if (typeof answer.usage?.prompt_tokens === 'number') usage.inputTokens = answer.usage.prompt_tokens;
    if (typeof answer.usage?.completion_tokens === 'number') usage.outputTokens = answer.usage.completion_tokens;
    return { text: content, usage };
  };
}
