/**
 * Message and tool shapes of the three wire formats, written structurally so that the
 * providers' own SDK types (`ChatCompletionMessageParam`, `Anthropic.MessageParam`, the AI SDK's
 * `ModelMessage`) fit them without autocontext depending on any SDK. Fields autocontext does
 * not read travel untouched; the types list the ones it does, plus the common ones.
 *
 * @module
 */

/** A wire format: OpenAI chat completions, the Anthropic Messages API, or the Vercel AI SDK. */
export type FormatName = 'openai' | 'anthropic' | 'ai-sdk';

// ---------------------------------------------------------------------------------------------
// OpenAI chat completions
// ---------------------------------------------------------------------------------------------

/** A tool call of an OpenAI assistant message. */
export interface OpenAIToolCall {
  id: string;
  type?: 'function';
  function: { name: string; arguments: string };
}

/** A content part of an OpenAI message (text, refusal, image, audio, file, ...). */
export interface OpenAIContentPart {
  type: string;
  text?: string;
  refusal?: string;
  image_url?: { url: string; detail?: string };
}

/** An OpenAI chat-completions message (`system`, `developer`, `user`, `assistant`, `tool`). */
export interface OpenAIMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: string | null | readonly OpenAIContentPart[];
  name?: string;
  tool_calls?: readonly OpenAIToolCall[];
  tool_call_id?: string;
  refusal?: string | null;
  audio?: { id: string } | null;
}

/** The `context_reload` tool as an OpenAI function tool. */
export interface OpenAIReloadTool {
  type: 'function';
  function: { name: 'context_reload'; description: string; parameters: Record<string, unknown> };
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages API
// ---------------------------------------------------------------------------------------------

/** A prompt-cache breakpoint on a block. */
export interface AnthropicCacheControl {
  type: 'ephemeral';
  ttl?: string;
}

/** A text block. */
export interface AnthropicTextBlock {
  type: 'text';
  text: string;
  cache_control?: AnthropicCacheControl | null;
  citations?: readonly unknown[] | null;
}

/** An image block (counted as a fixed 1600 tokens). */
export interface AnthropicImageBlock {
  type: 'image';
  source: { type: string };
  cache_control?: AnthropicCacheControl | null;
}

/** A document block (a text source counts its text; PDFs, URLs and files a fixed 3000 tokens). */
export interface AnthropicDocumentBlock {
  type: 'document';
  source: { type: string };
  title?: string | null;
  context?: string | null;
  cache_control?: AnthropicCacheControl | null;
}

/** Extended thinking, signed: autocontext never edits it and keeps it first in its message. */
export interface AnthropicThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature: string;
}

/** Encrypted thinking: kept byte-exact like {@link AnthropicThinkingBlock}. */
export interface AnthropicRedactedThinkingBlock {
  type: 'redacted_thinking';
  data: string;
}

/** A tool call of the model. */
export interface AnthropicToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
  cache_control?: AnthropicCacheControl | null;
}

/** A tool's answer, in a user message, before any other block of that message. */
export interface AnthropicToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content?: string | readonly (AnthropicTextBlock | AnthropicImageBlock | AnthropicDocumentBlock | AnthropicOtherBlock)[];
  is_error?: boolean;
  cache_control?: AnthropicCacheControl | null;
}

/** Any other block (server tools, search results, later types): kept as it came. */
export interface AnthropicOtherBlock {
  type: string;
}

/** A content block of an Anthropic message. */
export type AnthropicContentBlock =
  | AnthropicTextBlock
  | AnthropicImageBlock
  | AnthropicDocumentBlock
  | AnthropicThinkingBlock
  | AnthropicRedactedThinkingBlock
  | AnthropicToolUseBlock
  | AnthropicToolResultBlock
  | AnthropicOtherBlock;

/**
 * An Anthropic Messages API message. The system prompt is not a message: it is the request's
 * top-level `system` parameter (count it in `reservedTokens`).
 */
export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string | readonly AnthropicContentBlock[];
}

/** The `context_reload` tool as an Anthropic tool definition. */
export interface AnthropicReloadTool {
  name: 'context_reload';
  description: string;
  input_schema: Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------
// Vercel AI SDK ModelMessage
// ---------------------------------------------------------------------------------------------

/** Provider-specific options of a message or part (`providerOptions`). */
export type AiSdkProviderOptions = Record<string, Record<string, unknown>>;

/** A text part. */
export interface AiSdkTextPart {
  type: 'text';
  text: string;
  providerOptions?: AiSdkProviderOptions;
}

/** An image part (bytes travel as base64 text; counted as a fixed 1600 tokens). */
export interface AiSdkImagePart {
  type: 'image';
  image: unknown;
  mediaType?: string;
  providerOptions?: AiSdkProviderOptions;
}

/** A file part (bytes travel as base64 text; images count 1600 tokens, other files 3000). */
export interface AiSdkFilePart {
  type: 'file';
  data: unknown;
  mediaType: string;
  filename?: string;
  providerOptions?: AiSdkProviderOptions;
}

/** Model reasoning; its provider signature rides in `providerOptions`, so it is never edited. */
export interface AiSdkReasoningPart {
  type: 'reasoning';
  text: string;
  providerOptions?: AiSdkProviderOptions;
}

/** A tool call of the model. */
export interface AiSdkToolCallPart {
  type: 'tool-call';
  toolCallId: string;
  toolName: string;
  input: unknown;
  providerExecuted?: boolean;
  providerOptions?: AiSdkProviderOptions;
}

/** The output of a tool (`text`, `json`, `error-text`, `error-json`, `content`, `execution-denied`). */
export interface AiSdkToolResultOutput {
  type: string;
  value?: unknown;
  reason?: string;
}

/** A tool's answer. */
export interface AiSdkToolResultPart {
  type: 'tool-result';
  toolCallId: string;
  toolName: string;
  output: AiSdkToolResultOutput;
  providerOptions?: AiSdkProviderOptions;
}

/** A request for the user's approval of a tool call. */
export interface AiSdkToolApprovalRequest {
  type: 'tool-approval-request';
  approvalId: string;
  toolCallId: string;
}

/** The user's answer to a {@link AiSdkToolApprovalRequest}. */
export interface AiSdkToolApprovalResponse {
  type: 'tool-approval-response';
  approvalId: string;
  approved: boolean;
  reason?: string;
}

/** An AI SDK `ModelMessage`. */
export type AiSdkMessage =
  | { role: 'system'; content: string; providerOptions?: AiSdkProviderOptions }
  | { role: 'user'; content: string | readonly (AiSdkTextPart | AiSdkImagePart | AiSdkFilePart)[]; providerOptions?: AiSdkProviderOptions }
  | {
      role: 'assistant';
      content:
        | string
        | readonly (AiSdkTextPart | AiSdkFilePart | AiSdkReasoningPart | AiSdkToolCallPart | AiSdkToolResultPart | AiSdkToolApprovalRequest)[];
      providerOptions?: AiSdkProviderOptions;
    }
  | { role: 'tool'; content: readonly (AiSdkToolResultPart | AiSdkToolApprovalResponse)[]; providerOptions?: AiSdkProviderOptions };

/**
 * The `context_reload` tool as an AI SDK tool definition: `inputSchema` is a plain JSON schema
 * here (wrap it with the AI SDK's `jsonSchema()`), or take the ready tool of
 * `autocontext/ai-sdk`.
 */
export interface AiSdkReloadToolDefinition {
  description: string;
  inputSchema: Record<string, unknown>;
}

/** The `context_reload` tool definition of format `F`. */
export type ReloadToolFor<F extends FormatName> = F extends 'anthropic'
  ? AnthropicReloadTool
  : F extends 'ai-sdk'
    ? AiSdkReloadToolDefinition
    : OpenAIReloadTool;

/** The arguments of a `context_reload` call. */
export interface ReloadArguments {
  /** The uuid from a `<!-- CONTEXT_OFFLOAD: uuid=... -->` marker. */
  working_context_offload_uuid: string;
  /** Which page of a long reload to return, from 1 (default 1). */
  page?: number;
}
