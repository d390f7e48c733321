// A scripted model for the OpenAI Agents SDK (its `Model` interface: getResponse and
// getStreamedResponse), with the items the Responses API returns in the SDK's spelling. Each
// call records the request's input; `next(input, n)` decides the response's output items.
import { Usage } from '@openai/agents';
import { AutoContextMemory } from 'autocontext';

/** A model whose answers `next(input, callNumber)` scripts. */
export class ScriptedModel {
  /** @param {(input: any[], n: number) => any[]} next */
  constructor(next) {
    this.next = next;
    /** The input of every call, as the model got it. */
    this.inputs = [];
  }

  async getResponse(request) {
    const input = structuredClone(request.input);
    this.inputs.push(input);
    const output = this.next(input, this.inputs.length);
    const usage = new Usage({ requests: 1, inputTokens: 100, outputTokens: 10, totalTokens: 110 });
    return { usage, output, responseId: `resp_${this.inputs.length}` };
  }

  async *getStreamedResponse(request) {
    const { output, responseId } = await this.getResponse(request);
    const usage = { requests: 1, inputTokens: 100, outputTokens: 10, totalTokens: 110, inputTokensDetails: [], outputTokensDetails: [] };
    yield { type: 'response_done', response: { id: responseId, usage, output } };
  }
}

/** A reasoning item as the SDK writes it. */
export const reasoning = (n) => ({ type: 'reasoning', id: `rs_${n}`, content: [{ type: 'input_text', text: `Step ${n}: what next.` }], providerData: { encryptedContent: `ENC-${n}` } });

/** A function call item as the SDK writes it. */
export const functionCall = (callId, name, args) => ({ type: 'function_call', id: `fc_${callId}`, callId, name, arguments: JSON.stringify(args), status: 'completed' });

/** An assistant message item as the SDK writes it. */
export const message = (text, n) => ({ type: 'message', id: `msg_${n}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] });

/** The text of a function call's output in an input list (string or structured). */
export function outputText(item) {
  return typeof item.output === 'string' ? item.output : (item.output?.text ?? JSON.stringify(item.output));
}

/** Tokens of a request made of `input`, as autocontext counts them (request overhead included). */
export function requestTokens(input) {
  const m = new AutoContextMemory({ format: 'openai-responses', maxToken: 1_000_000_000, msgThreshold: 10_000_000 });
  m.add(input);
  return m.tokenCount();
}
