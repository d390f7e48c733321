/**
 * The TypeScript shapes of the wire formats. The message types are the providers' own SDK
 * types (`ChatCompletionMessageParam`, Anthropic's `MessageParam`, the AI SDK's `ModelMessage`,
 * `@google/genai`'s `Content`), copied structurally into `sdk/` so that values pass between an
 * SDK and autocontext both ways without autocontext depending on any SDK. Their names are also
 * a value ({@link FORMAT_NAMES}, written from the engine's list), for code that must know every
 * format at run time (the command line).
 *
 * @module
 */

import type { OpenAIChatCompletionMessageParam, OpenAIChatCompletionMessageToolCall } from './sdk/openai.js';
import type { AnthropicContentBlockParam, AnthropicMessageParam, AnthropicToolUseBlockParam } from './sdk/anthropic.js';
import type { AiSdkModelMessage, AiSdkToolCallPart } from './sdk/ai-sdk.js';
import type { OpenAIResponsesResponseFunctionToolCall, OpenAIResponsesResponseInputItem } from './sdk/openai-responses.js';
import type { GeminiContent, GeminiFunctionCall, GeminiPart } from './sdk/gemini.js';

export type * from './sdk/openai.js';
export type * from './sdk/openai-responses.js';
export type * from './sdk/anthropic.js';
export type * from './sdk/ai-sdk.js';
export type * from './sdk/gemini.js';

/**
 * The TypeScript shapes of each wire format: its messages, its `context_reload` tool and the
 * calls of that tool {@link AutoContextMemory.handleReloadCall} takes. A memory's methods are
 * typed by the entry of its `format` option, so adding a format is adding an entry here.
 */
export interface FormatTypes {
  /** OpenAI chat completions. */
  openai: { message: OpenAIMessage; reloadTool: OpenAIReloadTool; reloadCall: OpenAIToolCall | string };
  /** The Anthropic Messages API. */
  anthropic: { message: AnthropicMessage; reloadTool: AnthropicReloadTool; reloadCall: AnthropicToolUseBlockParam };
  /** The Vercel AI SDK's `ModelMessage`. */
  'ai-sdk': { message: AiSdkMessage; reloadTool: AiSdkReloadToolDefinition; reloadCall: AiSdkToolCallPart };
  /** OpenAI Responses API input items (and the OpenAI Agents SDK's items, through `autocontext/openai-agents`). */
  'openai-responses': { message: OpenAIResponsesItem; reloadTool: OpenAIResponsesReloadTool; reloadCall: OpenAIResponsesFunctionCall | string };
  /** Gemini `Content`s (`@google/genai`, and Google ADK's `LlmRequest.contents`). */
  gemini: { message: GeminiMessage; reloadTool: GeminiReloadTool; reloadCall: GeminiFunctionCall | GeminiPart };
}

/**
 * A wire format: OpenAI chat completions, the Anthropic Messages API, the Vercel AI SDK, the
 * OpenAI Responses API, or Gemini's `Content`s.
 */
export type FormatName = keyof FormatTypes;

// generated:format-names (tests/generated.rs writes this part from src/format; edit it there)
/** Every wire format's name, in the engine's order. */
export const FORMAT_NAMES = ['openai', 'anthropic', 'ai-sdk', 'openai-responses', 'gemini'] as const satisfies readonly FormatName[];
// end generated:format-names

/** The message type of format `F`. */
export type MessageFor<F extends FormatName> = FormatTypes[F]['message'];

/** A message of any format. */
export type AnyMessage = MessageFor<FormatName>;

/** The `context_reload` tool definition of format `F`. */
export type ReloadToolFor<F extends FormatName> = FormatTypes[F]['reloadTool'];

/** What {@link AutoContextMemory.handleReloadCall} takes for format `F`: the format's tool call, or the parsed arguments. */
export type ReloadCallFor<F extends FormatName> = FormatTypes[F]['reloadCall'] | ReloadArguments;

/**
 * The JSON schema of the `context_reload` tool's arguments (a type alias, not an interface,
 * so that it fits the SDKs' `{ [key: string]: unknown }` schema types).
 */
export type ReloadToolParameters = {
  type: 'object';
  properties: {
    working_context_offload_uuid: { type: 'string'; description: string };
    page: { type: 'integer'; minimum: number; description: string };
  };
  required: string[];
  additionalProperties: false;
};

// ---------------------------------------------------------------------------------------------
// OpenAI chat completions
// ---------------------------------------------------------------------------------------------

/**
 * An OpenAI chat-completions message: the `openai` SDK's `ChatCompletionMessageParam`, and the
 * assistant message of a completion (`completion.choices[0].message`) as it comes. The
 * deprecated `function` role and custom (non-function) tool calls are refused with
 * `INVALID_MESSAGE`.
 */
export type OpenAIMessage = OpenAIChatCompletionMessageParam;

/** A tool call of an OpenAI assistant message (`tool_calls[i]`). */
export type OpenAIToolCall = OpenAIChatCompletionMessageToolCall;

/** The `context_reload` tool as an OpenAI function tool (a `ChatCompletionTool`). */
export interface OpenAIReloadTool {
  type: 'function';
  function: { name: 'context_reload'; description: string; parameters: ReloadToolParameters };
}

// ---------------------------------------------------------------------------------------------
// OpenAI Responses API
// ---------------------------------------------------------------------------------------------

/**
 * An input item of the OpenAI Responses API: the `openai` SDK's `ResponseInputItem` (a message
 * with or without `type`, a `function_call`, a `function_call_output`, `reasoning`, a
 * `compaction`, hosted tool items), and the items of `response.output` as they come. The
 * OpenAI Agents SDK's spelling of the same items (`callId`, `function_call_result`) is read
 * too; `autocontext/openai-agents` types a memory with the Agents SDK's `AgentInputItem`.
 * The items of one model response (reasoning, message, function calls) are kept together.
 */
export type OpenAIResponsesItem = OpenAIResponsesResponseInputItem;

/** A `function_call` item (`response.output[i]`), as {@link AutoContextMemory.handleReloadCall} takes it. */
export type OpenAIResponsesFunctionCall = OpenAIResponsesResponseFunctionToolCall;

/** The `context_reload` tool as a Responses API function tool (a `FunctionTool`, `strict` off: `page` is optional). */
export interface OpenAIResponsesReloadTool {
  type: 'function';
  name: 'context_reload';
  description: string;
  parameters: ReloadToolParameters;
  strict: false;
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages API
// ---------------------------------------------------------------------------------------------

/**
 * An Anthropic Messages API message: the `@anthropic-ai/sdk` `MessageParam`; an assistant turn
 * is `{ role: 'assistant', content: response.content }`. The system prompt is the request's
 * top-level `system` parameter (count it in `reservedTokens`): a `system` message is refused
 * with `INVALID_MESSAGE`.
 */
export type AnthropicMessage = AnthropicMessageParam;

/** A content block of an Anthropic message. */
export type AnthropicContentBlock = AnthropicContentBlockParam;

/** The `context_reload` tool as an Anthropic tool definition (a `Tool`). */
export interface AnthropicReloadTool {
  name: 'context_reload';
  description: string;
  input_schema: ReloadToolParameters;
}

// ---------------------------------------------------------------------------------------------
// Vercel AI SDK ModelMessage
// ---------------------------------------------------------------------------------------------

/** An AI SDK `ModelMessage` (bytes in parts come back as base64 text, which the AI SDK accepts). */
export type AiSdkMessage = AiSdkModelMessage;

/**
 * The `context_reload` tool as an AI SDK tool definition: `inputSchema` is a plain JSON schema
 * here (wrap it with the AI SDK's `jsonSchema()`), or take the ready tool of
 * `autocontext/ai-sdk`.
 */
export interface AiSdkReloadToolDefinition {
  description: string;
  inputSchema: ReloadToolParameters;
}

// ---------------------------------------------------------------------------------------------
// Gemini (@google/genai)
// ---------------------------------------------------------------------------------------------

/**
 * A Gemini `Content` (`@google/genai`'s `Content`): role `user` or `model` (none is the user's)
 * and its `parts`; a model turn is `response.candidates[0].content` as it comes. The system
 * prompt is the request's `config.systemInstruction` (count it in `reservedTokens`): a `system`
 * content is refused with `INVALID_MESSAGE`. Function calls may come without ids: each turn of
 * calls pairs with the turn right after it, which answers every call.
 */
export type GeminiMessage = GeminiContent;

/**
 * The `context_reload` tool as a Gemini `FunctionDeclaration` (its arguments as a JSON schema):
 * put it in `config.tools: [{ functionDeclarations: [memory.reloadTool()] }]`.
 */
export interface GeminiReloadTool {
  name: 'context_reload';
  description: string;
  parametersJsonSchema: ReloadToolParameters;
}

/** The arguments of a `context_reload` call. */
export interface ReloadArguments {
  /** The uuid from a `<!-- CONTEXT_OFFLOAD: uuid=... -->` marker. */
  working_context_offload_uuid: string;
  /** Which page of a long reload to return, from 1 (default 1). */
  page?: number;
}
