// Type-checked (never run) against the installed declarations: the formats and the AI SDK
// helpers as a TypeScript user writes them, with the `ai` package's own types.
import { generateText, streamText, stepCountIs, type ModelMessage, type LanguageModel } from 'ai';
import { AutoContextMemory, validate } from 'autocontext';
import type { AnthropicMessage, AiSdkMessage, OpenAIMessage, ReloadArguments, FormatName } from 'autocontext';
import { prepareStep, reloadTool } from 'autocontext/ai-sdk';

declare const model: LanguageModel;

// The format option picks the message types and the reload tool's shape.
const anthropic = new AutoContextMemory({ format: 'anthropic', maxToken: 200_000 });
const inputSchema: Record<string, unknown> = anthropic.reloadTool().input_schema;
const openai: AutoContextMemory<'openai'> = new AutoContextMemory({ maxToken: 128_000, offloadReloadLimit: 8_000 });
const openaiMessages: OpenAIMessage[] = openai.messages();
const fn: string = openai.reloadTool().function.name;
const sdkDefinition: Record<string, unknown> = new AutoContextMemory({ format: 'ai-sdk' }).reloadTool().inputSchema;

// Structural message types take the providers' shapes.
const turn: AnthropicMessage[] = [
  { role: 'user', content: 'hi' },
  { role: 'assistant', content: [{ type: 'thinking', thinking: 't', signature: 's' }, { type: 'tool_use', id: 'a', name: 'f', input: {} }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: 'r', is_error: false }] },
];
anthropic.add(turn);
const format: FormatName = 'ai-sdk';
const problems = validate(turn, 'anthropic').length + validate([], format).length;

// The AI SDK: ModelMessage in, prepareStep and the reload tool straight into generateText.
const memory = new AutoContextMemory<'ai-sdk', ModelMessage>({ format: 'ai-sdk', maxToken: 128_000 });
memory.add({ role: 'user', content: 'hello' });
const step = prepareStep(memory);
const run = generateText({
  model,
  messages: memory.messages(),
  tools: { context_reload: reloadTool(memory) },
  prepareStep: step,
  onFinish: step.onFinish,
  stopWhen: stepCountIs(5),
}).then((r) => step.commit(r.responseMessages));
const stream = streamText({ model, messages: memory.messages(), prepareStep: step, onFinish: step.onFinish });
// A memory typed by its format alone works the same way.
const plain = new AutoContextMemory({ format: 'ai-sdk' });
const plainStep = prepareStep(plain);
const plainRun = generateText({ model, messages: [{ role: 'user', content: 'hi' }], tools: { context_reload: reloadTool(plain) }, prepareStep: plainStep });
const sdkMessages: AiSdkMessage[] = [{ role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c', toolName: 'f', output: { type: 'text', value: 'v' } }] }];
const args: ReloadArguments = { working_context_offload_uuid: 'u', page: 2 };

// @ts-expect-error not a format
new AutoContextMemory({ format: 'cohere' });
// @ts-expect-error Anthropic has no tool role (tool results are blocks of a user message)
const noTool: AnthropicMessage = { role: 'tool', content: 'x' };

export { inputSchema, fn, openaiMessages, sdkDefinition, problems, run, stream, plainRun, sdkMessages, args, noTool };
