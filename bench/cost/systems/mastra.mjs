// Mastra's prompt processors, driven through their public API as an agent's loop drives them:
// before each model call the conversation is the provider prompt (AI SDK
// `LanguageModelV2Prompt`: system text, user and assistant parts, tool results) and each
// processor's `processLLMRequest` may return a new prompt. Their changes are transient (stored
// messages keep everything), so every call starts from the whole history.
//
// A Mastra agent run starts at a user message and lasts through the tool steps that follow;
// each processor's `state` lives for one run. ToolCallFilter with no options filters the tool
// calls of earlier runs only (those in the prompt when the run started) and keeps the current
// run's. TokenLimiter counts with its own estimate (tokenx), not with the benchmark's counter.
import { TokenLimiter, ToolCallFilter } from '@mastra/core/processors';
import { Bridge, parseArguments } from './convert.mjs';

/** Trace messages as provider prompt messages, one for one; `names` maps call ids to tool names. */
function toPrompt(m, names) {
  const text = typeof m.content === 'string' ? m.content : '';
  switch (m.role) {
    case 'system':
    case 'developer':
      return { role: 'system', content: typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text ?? '').join('\n') };
    case 'user': {
      const content = Array.isArray(m.content)
        ? m.content.map((p) =>
            p.type === 'text' ? { type: 'text', text: p.text } : { type: 'file', data: p.image_url?.url ?? '', mediaType: /^data:([^;]+);/.exec(p.image_url?.url ?? '')?.[1] ?? 'image/png' },
          )
        : [{ type: 'text', text }];
      return { role: 'user', content };
    }
    case 'assistant': {
      const content = text.length > 0 ? [{ type: 'text', text }] : [];
      for (const c of m.tool_calls ?? []) {
        names.set(c.id, c.function.name);
        content.push({ type: 'tool-call', toolCallId: c.id, toolName: c.function.name, input: parseArguments(c.function.arguments) });
      }
      return { role: 'assistant', content };
    }
    case 'tool':
      return { role: 'tool', content: [{ type: 'tool-result', toolCallId: m.tool_call_id, toolName: names.get(m.tool_call_id) ?? 'tool', output: { type: 'text', value: text } }] };
    default:
      throw new Error(`no prompt message for role ${m.role}`);
  }
}

/** A prompt message a processor wrote or changed, as OpenAI chat messages (a tool message may hold several results). */
function fromPrompt(p) {
  if (p.role === 'system') return [{ role: 'system', content: p.content }];
  if (p.role === 'user') {
    const texts = p.content.filter((x) => x.type === 'text');
    return [{ role: 'user', content: texts.length === p.content.length ? texts.map((x) => x.text).join('') : p.content.map((x) => (x.type === 'text' ? { type: 'text', text: x.text } : { type: 'image_url', image_url: { url: String(x.data) } })) }];
  }
  if (p.role === 'assistant') {
    const text = p.content.filter((x) => x.type === 'text').map((x) => x.text).join('');
    const calls = p.content.filter((x) => x.type === 'tool-call');
    const m = { role: 'assistant', content: text.length > 0 || calls.length === 0 ? text : null };
    if (calls.length > 0) m.tool_calls = calls.map((x) => ({ id: x.toolCallId, type: 'function', function: { name: x.toolName, arguments: typeof x.input === 'string' ? x.input : JSON.stringify(x.input) } }));
    return [m];
  }
  return p.content.filter((x) => x.type === 'tool-result').map((x) => ({ role: 'tool', tool_call_id: x.toolCallId, content: typeof x.output.value === 'string' ? x.output.value : JSON.stringify(x.output.value) }));
}

function mastra(id, label, makeProcessors) {
  return {
    id,
    label,
    family: 'mastra',
    peer: true,
    start: ({ window, ratio, clock }) => {
      const bridge = new Bridge((p) => [p.content]);
      const names = new Map();
      const prompt = [];
      const processors = makeProcessors(Math.floor(window * ratio));
      let states = processors.map(() => ({}));
      let step = 0;
      const model = { provider: 'openai', modelId: 'benchmark', specificationVersion: 'v2' };
      return {
        add(m) {
          // A user message starts a new run: the processors' per-run state starts afresh.
          if (m.role === 'user') {
            states = processors.map(() => ({}));
            step = 0;
          }
          prompt.push(bridge.wrap(m, toPrompt(m, names)));
        },
        async request() {
          let current = prompt.slice();
          let failed = null;
          await clock.time(async () => {
            for (const [i, p] of processors.entries()) {
              try {
                const out = await p.processLLMRequest({ prompt: current, model, stepNumber: step, steps: [], state: states[i], abort: (reason) => { throw new Error(reason); } });
                if (out?.prompt) current = out.prompt;
              } catch (e) {
                // A TripWire: the run stops and nothing is sent but the system prompt.
                failed = e;
                current = current.filter((x) => x.role === 'system');
                break;
              }
            }
          });
          step++;
          const messages = current.flatMap((p) => {
            const back = bridge.back(p, (x) => fromPrompt(x));
            return Array.isArray(back) ? back : [back];
          });
          return { messages, pass: null, error: failed ? String(failed.message ?? failed) : undefined };
        },
        reloaded: async () => [],
      };
    },
  };
}

export const MASTRA_SYSTEMS = [
  mastra('mastra-token-limiter', 'Mastra TokenLimiter', (limit) => [new TokenLimiter(limit)]),
  mastra('mastra-toolcallfilter-token-limiter', 'Mastra ToolCallFilter + TokenLimiter', (limit) => [new ToolCallFilter(), new TokenLimiter(limit)]),
];
