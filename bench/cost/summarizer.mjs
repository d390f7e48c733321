// The one offline summarizer every system gets: '[summary] ' followed by the first 400
// characters of the span it is asked to summarize. It needs no model, so the benchmark measures
// the context managers, not a model; every call is recorded (the request's messages and the
// answer) and counted after the management call returns, outside its CPU time.
//
// A summarize call is priced like the agent's own calls: a provider's prompt cache serves the
// leading messages it shares with the agent's previous request (a host may send the span as
// that request plus an instruction), so the log keeps, with each call, the agent's request the
// replay accounted last before it.
import { canonical, commonPrefix, messageTokens, requestTokens } from '../../js/accounting.js';

export const SUMMARY_PREFIX = '[summary] ';
export const SUMMARY_CHARS = 400;

/** The summary of a span's text. */
export function summarizeSpan(span) {
  return SUMMARY_PREFIX + span.slice(0, SUMMARY_CHARS);
}

/** Records summarizer calls: what was sent (as OpenAI messages), what came back, and the agent's request before it. */
export class SummarizerLog {
  constructor() {
    this.calls = [];
    this.previous = null;
  }

  /** Notes the agent's request the replay just accounted: the prompt cache a later summarize call can read. */
  sent(request) {
    this.previous = request;
  }

  /** Notes one call: `input` the messages the summarizer model would be sent, `output` its answer. */
  record(input, output) {
    this.calls.push({ input, output, previous: this.previous });
  }

  /**
   * Tokens of every recorded call, counted with `countText` and the benchmark's per-message
   * accounting: `input` (the whole request), of which `cachedInput` (its leading messages equal,
   * by canonical JSON, to those of the agent's previous request), and `output`. Clears the log.
   */
  drain(countText) {
    const keysOf = new WeakMap();
    const keys = (request) => {
      let k = keysOf.get(request);
      if (k === undefined) {
        k = request.map(canonical);
        keysOf.set(request, k);
      }
      return k;
    };
    let input = 0;
    let cachedInput = 0;
    let output = 0;
    for (const c of this.calls) {
      input += requestTokens(c.input, countText);
      output += countText(c.output);
      if (c.previous === null) continue;
      const shared = commonPrefix(keys(c.previous), keys(c.input));
      for (let i = 0; i < shared; i++) cachedInput += messageTokens(c.input[i], countText);
    }
    const calls = this.calls.length;
    this.calls = [];
    return { calls, input, cachedInput, output };
  }
}
