// Type-checked (never run), strict and without casts, against the installed declarations and the
// providers' own SDKs (`openai`, `@anthropic-ai/sdk`, `ai`): a memory's types follow its
// `format` option, so SDK values go in and come out with no type argument and no conversion.
import type OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionMessage,
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import type { ResponseUsage } from 'openai/resources/responses/responses';
import type Anthropic from '@anthropic-ai/sdk';
import type { ContentBlock, Message, MessageParam, Tool, ToolUnion, ToolUseBlock, Usage } from '@anthropic-ai/sdk/resources/messages';
import type { LanguageModelUsage, ModelMessage, ToolCallPart } from 'ai';
import { AutoContextMemory, compress } from 'autocontext';
import type {
  AiSdkMessage,
  AnthropicMessage,
  AnyMessage,
  FormatName,
  MessageFor,
  OpenAIMessage,
  OpenAIToolCall,
  AnthropicToolUseBlockParam,
  AiSdkToolCallPart,
  SummarizeFn,
  UsageReport,
} from 'autocontext';

/** `true` when each type is assignable to the other, else which way fails. */
type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : 'the SDK type is not assignable to ours') : 'ours is not assignable to the SDK type';

// The message and tool-call types are the SDKs' own, both ways.
export const openaiMessage: Mutual<OpenAIMessage, ChatCompletionMessageParam> = true;
export const openaiCall: Mutual<OpenAIToolCall, ChatCompletionMessageToolCall> = true;
export const anthropicMessage: Mutual<AnthropicMessage, MessageParam> = true;
export const anthropicCall: Mutual<AnthropicToolUseBlockParam, Anthropic.ToolUseBlockParam> = true;
export const aiSdkMessage: Mutual<AiSdkMessage, ModelMessage> = true;
export const aiSdkCall: Mutual<AiSdkToolCallPart, ToolCallPart> = true;
export const byFormat: [Mutual<MessageFor<'openai'>, ChatCompletionMessageParam>, Mutual<MessageFor<'anthropic'>, MessageParam>, Mutual<MessageFor<'ai-sdk'>, ModelMessage>] = [
  true,
  true,
  true,
];

declare const completion: ChatCompletion;
declare const anthropicResponse: Message;
declare const openaiClient: OpenAI;
declare const anthropicClient: Anthropic;

// OpenAI: no type argument, no format option (the default).
const chat = new AutoContextMemory({ maxToken: 128_000 });
chat.add(completion.choices[0].message);
const reply: ChatCompletionMessage = completion.choices[0].message;
chat.add([{ role: 'system', content: 'Be brief.' }, reply]);
const history: ChatCompletionMessageParam[] = chat.messages();
chat.add(history);
const openaiTools: ChatCompletionTool[] = [chat.reloadTool()];
for (const call of completion.choices[0].message.tool_calls ?? []) {
  if (call.type === 'function' && call.function.name === 'context_reload') void chat.handleReloadCall(call);
}
const fromChat: UsageReport | undefined = chat.observeUsage(completion.usage);
const usage: CompletionUsage = { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 };
const chatReport: UsageReport = chat.observeUsage(usage);
const reloaded: Promise<ChatCompletionMessageParam[]> = chat.reload('uuid');
const openaiRequest = openaiClient.chat.completions.create({ model: 'gpt-4.1', messages: chat.messages(), tools: [chat.reloadTool()] });

// Anthropic: the format option alone types everything.
const claude = new AutoContextMemory({ format: 'anthropic', maxToken: 200_000 });
claude.add({ role: 'user', content: 'hi' });
claude.add({ role: 'assistant', content: anthropicResponse.content });
const blocks: ContentBlock[] = anthropicResponse.content;
claude.add({ role: 'assistant', content: blocks });
const turns: MessageParam[] = claude.messages();
claude.add(turns);
const anthropicTool: Tool = claude.reloadTool();
const anthropicTools: ToolUnion[] = [claude.reloadTool()];
for (const block of anthropicResponse.content) {
  if (block.type === 'tool_use') {
    const use: ToolUseBlock = block;
    void claude.handleReloadCall(use);
  }
}
const anthropicUsage: Usage = anthropicResponse.usage;
const claudeReport: UsageReport = claude.observeUsage(anthropicUsage);
const anthropicRequest = anthropicClient.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 1024, messages: claude.messages(), tools: [claude.reloadTool()] });

// The AI SDK.
const sdk = new AutoContextMemory({ format: 'ai-sdk' });
sdk.add({ role: 'user', content: [{ type: 'image', image: new Uint8Array([1, 2]) }] });
const modelMessages: ModelMessage[] = sdk.messages();
sdk.add(modelMessages);
declare const part: ToolCallPart;
void sdk.handleReloadCall(part);
declare const sdkUsage: LanguageModelUsage;
const sdkReport: UsageReport = sdk.observeUsage(sdkUsage);
declare const responsesUsage: ResponseUsage;
const responsesReport: UsageReport = chat.observeUsage(responsesUsage);

// Summarize requests carry the memory's format; one function untyped by format fits them all.
const summarizeClaude: SummarizeFn<AnthropicMessage> = async ({ system, messages, signal }) => {
  const out = await anthropicClient.messages.create({ model: 'claude-haiku-4-5', max_tokens: 1024, system, messages }, { signal });
  return out.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
};
const anywhere: SummarizeFn = async ({ messages }) => `${messages.length} messages`;
const everyFormat = [
  new AutoContextMemory({ format: 'anthropic', summarize: summarizeClaude }),
  new AutoContextMemory({ format: 'anthropic', summarize: anywhere }),
  new AutoContextMemory({ format: 'openai', summarize: anywhere }),
  new AutoContextMemory({ format: 'ai-sdk', summarize: anywhere }),
  new AutoContextMemory({
    summarize: async ({ system, prompt, messages, signal }) => {
      const out = await openaiClient.chat.completions.create(
        { model: 'gpt-4.1-mini', messages: [{ role: 'system', content: system }, ...messages, { role: 'user', content: prompt }] },
        { signal },
      );
      return out.choices[0].message.content ?? '';
    },
  }),
];

// A memory as a parameter: named by its format.
function send(memory: AutoContextMemory<'anthropic'>): MessageParam[] {
  return memory.messages();
}
const restored = AutoContextMemory.fromJSON<'anthropic'>(claude.toJSON());
const sent: MessageParam[] = send(restored);
const once = compress(turns, { format: 'anthropic', maxToken: 1_000 }).then((out) => {
  const messages: MessageParam[] = out.messages;
  return messages.length;
});
const formats: FormatName[] = ['openai', 'anthropic', 'ai-sdk'];
const any: AnyMessage[] = [...chat.messages(), ...claude.messages(), ...sdk.messages()];

// The format's shapes are enforced.
// @ts-expect-error an OpenAI tool message is not an Anthropic message
claude.add({ role: 'tool', tool_call_id: 'c', content: 'x' });
// @ts-expect-error Anthropic messages are not OpenAI messages
chat.add({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c', content: 'x' }] });
// @ts-expect-error an Anthropic memory's messages are not chat-completions messages
const wrong: ChatCompletionMessageParam[] = claude.messages();
// @ts-expect-error messages of another format than the options say
void compress(history, { format: 'anthropic' });
// @ts-expect-error the OpenAI reload tool is not an Anthropic tool
const wrongTool: Tool = chat.reloadTool();

export {
  openaiTools,
  fromChat,
  chatReport,
  reloaded,
  openaiRequest,
  anthropicTool,
  anthropicTools,
  claudeReport,
  anthropicRequest,
  sdkReport,
  responsesReport,
  everyFormat,
  sent,
  once,
  formats,
  any,
  wrong,
  wrongTool,
};
