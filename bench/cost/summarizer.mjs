// The one offline summarizer every system gets: '[summary] ' followed by the first 400
// characters of the span it is asked to summarize. It needs no model, so the benchmark measures
// the context managers, not a model; every call is recorded (the request's text and the answer)
// and counted after the management call returns, outside its CPU time.

export const SUMMARY_PREFIX = '[summary] ';
export const SUMMARY_CHARS = 400;

/** The summary of a span's text. */
export function summarizeSpan(span) {
  return SUMMARY_PREFIX + span.slice(0, SUMMARY_CHARS);
}

/** Records summarizer calls: what was sent (as OpenAI messages) and what came back. */
export class SummarizerLog {
  constructor() {
    this.calls = [];
  }

  /** Notes one call: `input` the messages the summarizer model would be sent, `output` its answer. */
  record(input, output) {
    this.calls.push({ input, output });
  }

  /** Input and output tokens of every recorded call, counted with `requestTokens` and `countText`; clears the log. */
  drain(requestTokens, countText) {
    let input = 0;
    let output = 0;
    for (const c of this.calls) {
      input += requestTokens(c.input);
      output += countText(c.output);
    }
    const calls = this.calls.length;
    this.calls = [];
    return { calls, input, output };
  }
}
