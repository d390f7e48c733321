// Type-checked (never run), strict and without casts, against the installed declarations: the
// 'openai-responses' format against the `openai` SDK's Responses types (both ways), and
// autocontext/openai-agents against `@openai/agents`, as the README and docs show them.
import type OpenAI from 'openai';
import type { FunctionTool, Response, ResponseFunctionToolCall, ResponseInputItem, Tool } from 'openai/resources/responses/responses';
import { Agent, run } from '@openai/agents';
import type { AgentInputItem, Session } from '@openai/agents';
import { AutoContextMemory } from 'autocontext';
import type { MessageFor, OpenAIResponsesFunctionCall, OpenAIResponsesItem, SummarizeFn } from 'autocontext';
import { AutoContextSession } from 'autocontext/openai-agents';
import type { AutoContextSessionOptions } from 'autocontext/openai-agents';

/** `true` when each type is assignable to the other, else which way fails. */
type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : 'the SDK type is not assignable to ours') : 'ours is not assignable to the SDK type';

export const item: Mutual<OpenAIResponsesItem, ResponseInputItem> = true;
export const functionCall: Mutual<OpenAIResponsesFunctionCall, ResponseFunctionToolCall> = true;
export const byFormat: Mutual<MessageFor<'openai-responses'>, ResponseInputItem> = true;

declare const client: OpenAI;
declare const response: Response;
declare const summarize: SummarizeFn;

// The Responses API: the format option alone types everything.
const memory = new AutoContextMemory({ format: 'openai-responses', maxToken: 128_000, summarize });
memory.add({ role: 'user', content: 'What is in src/?' });
const input: ResponseInputItem[] = memory.messages();
const reloadTool: FunctionTool = memory.reloadTool();
const tools: Tool[] = [reloadTool];
export async function turn(): Promise<string> {
  await memory.compressIfNeeded();
  const next = await client.responses.create({ model: 'gpt-5', input: memory.messages(), tools: [memory.reloadTool()] });
  memory.observeUsage(next.usage);
  for (const out of next.output) {
    if (out.type === 'function_call' && out.name === 'context_reload') {
      memory.add(out);
      memory.add({ type: 'function_call_output', call_id: out.call_id, output: await memory.handleReloadCall(out) });
    }
  }
  return next.output_text;
}
void [input, tools, response];

// The Agents SDK: a session, its filter and its tool, no type argument.
const options: AutoContextSessionOptions = { maxToken: 128_000, summarize };
const session = new AutoContextSession(options);
export const asSession: Session = session;
const agent = new Agent({ name: 'Assistant', instructions: 'Be brief.', tools: [session.reloadTool] });
export async function ask(question: string): Promise<AgentInputItem[]> {
  const result = await run(agent, question, { session, callModelInputFilter: session.callModelInputFilter });
  void result.finalOutput;
  return session.getItems();
}
const restored: AutoContextSession = AutoContextSession.fromJSON(session.toJSON(), { summarize });
void restored;
