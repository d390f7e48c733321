/**
 * autocontext for the Vercel AI SDK: a `prepareStep` that compresses before every step of
 * `generateText` / `streamText`, and a ready `context_reload` tool.
 *
 * ```ts
 * import { generateText, stepCountIs } from 'ai';
 * import { AutoContextMemory } from 'autocontext';
 * import { prepareStep, reloadTool } from 'autocontext/ai-sdk';
 *
 * const memory = new AutoContextMemory({ format: 'ai-sdk', maxToken: 128_000, summarize });
 * memory.add({ role: 'user', content: question });
 * const step = prepareStep(memory);
 * const result = await generateText({
 *   model,
 *   messages: memory.messages(),
 *   tools: { ...tools, context_reload: reloadTool(memory) },
 *   prepareStep: step,
 *   onFinish: step.onFinish, // or step.commit(result.responseMessages) afterwards
 *   stopWhen: stepCountIs(20),
 * });
 * ```
 *
 * Tested with AI SDK 7; AI SDK 6 works too (its results name the messages of every step
 * `response.messages`, where 7 has `responseMessages` and keeps only the last step's in
 * `response.messages`; {@link AutoContextPrepareStep.commit} takes either).
 *
 * Nothing here imports `ai`: the tool's input schema is the AI SDK's own schema shape (the
 * object `jsonSchema()` returns), so the tool works with `generateText`, `streamText` and
 * `tool()` of AI SDK 6 and 7 without autocontext depending on a version of it.
 *
 * @module
 */

import { AutoContextError } from '../errors.js';
import { checkOptions, isMemory } from './options.js';
import type { AiSdkMessage, CompressResult, ReloadArguments } from '../types.js';
import { wireJson } from '../wire.js';

/** What the AI SDK passes to `prepareStep` (the fields autocontext reads). */
export interface PrepareStepInput<M> {
  /** The messages of this step: the call's messages plus what the earlier steps produced. */
  messages: M[];
  /** Which step this is, from 0. */
  stepNumber: number;
}

/**
 * The `prepareStep` function {@link prepareStep} returns, with its helpers. Its call signature
 * takes the caller's message type (`T`, the AI SDK's `ModelMessage` inside `generateText`): the
 * messages it returns are the ones the caller gave, compressed, as the memory holds them.
 */
export interface AutoContextPrepareStep<M> {
  /**
   * Adds the step's new messages to the memory, compresses if needed, and returns the
   * compressed list for the step.
   */
  <T = M>(input: PrepareStepInput<T>): Promise<{ messages: T[] }>;
  /**
   * Adds the messages of the call that no step has added yet (those of the last step): call it
   * once the call is done with `result.responseMessages` (AI SDK 7: every step's messages),
   * `result.response.messages` (AI SDK 7: the last step's; AI SDK 6: every step's) or
   * `result.finalStep.response.messages`. Messages the steps already added are recognized
   * and added once.
   */
  commit(responseMessages: readonly unknown[]): void;
  /**
   * {@link AutoContextPrepareStep.commit} as an `onFinish` callback of `generateText` /
   * `streamText`: it reads the event's `responseMessages` (AI SDK 7), else its
   * `response.messages` (AI SDK 6).
   */
  onFinish(event: FinishEvent): void;
}

/** What `onFinish` reads of the AI SDK's finish event (7 and 6 name the messages differently). */
export interface FinishEvent {
  /** Every step's response messages (AI SDK 7). */
  readonly responseMessages?: readonly unknown[];
  /** The response; its `messages` are every step's in AI SDK 6. */
  readonly response?: { readonly messages?: readonly unknown[] };
}

/** Options of {@link prepareStep}. */
export interface PrepareStepOptions {
  /** Called after each step's compression pass that changed the list. */
  onCompress?: (result: CompressResult) => void;
}

/**
 * What the helpers use of an `AutoContextMemory` made with `format: 'ai-sdk'`, written
 * structurally so a memory of any build (`autocontext`, `autocontext/full`, `autocontext/lite`)
 * fits.
 */
export interface AiSdkMemory<M> {
  add(message: M | readonly M[]): void;
  messages(): M[];
  originalMessages(): Promise<M[]>;
  compressIfNeeded(): Promise<CompressResult>;
  reloadTool(): unknown;
  handleReloadCall(call: unknown): Promise<string>;
}

function requireAiSdk(memory: AiSdkMemory<unknown>, who: string): void {
  if (!isMemory(memory)) {
    throw new AutoContextError('INVALID_ARGUMENT', `${who} takes the memory of the conversation: ${who}(new AutoContextMemory({ format: 'ai-sdk', ... }))`, { field: 'memory' });
  }
  const def = memory.reloadTool() as Record<string, unknown> | null;
  if (def === null || typeof def !== 'object' || !('inputSchema' in def)) {
    throw new AutoContextError('INVALID_CONFIG', `${who} needs a memory made with format: 'ai-sdk'`, { field: 'format' });
  }
}

/** JSON text of each message, bytes as base64, as the memory stores them. */
function keys(messages: readonly unknown[]): string[] {
  return messages.map((m) => wireJson(m) ?? 'undefined');
}

/** Whether `list` starts with `prefix` (texts compared). */
function startsWith(list: readonly string[], prefix: readonly string[]): boolean {
  return prefix.length <= list.length && prefix.every((k, i) => list[i] === k);
}

/**
 * A `prepareStep` for `generateText` / `streamText`: before every step it adds what is new to
 * the memory (at step 0, whatever of the call's messages the memory does not hold yet; later,
 * the messages the earlier steps produced), runs a compression pass if needed, and hands the
 * step the compressed list. Pass the call `messages: memory.messages()` (or your full
 * history; either is recognized), and after the call {@link AutoContextPrepareStep.commit} its
 * `responseMessages` (or use {@link AutoContextPrepareStep.onFinish}), which adds what the
 * last step produced.
 *
 * @throws {@link AutoContextError} `INVALID_ARGUMENT` when `memory` is not a memory,
 *   `INVALID_CONFIG` for a memory of another format or an option not of
 *   {@link PrepareStepOptions}; the step itself rejects with `INVALID_ARGUMENT` when the call's messages neither start with the
 *   memory's working list nor with its original messages.
 */
export function prepareStep<M extends object = AiSdkMessage>(
  memory: AiSdkMemory<M>,
  options: PrepareStepOptions = {},
): AutoContextPrepareStep<M> {
  const mem = memory;
  requireAiSdk(mem, 'prepareStep');
  checkOptions('prepareStep', options, ['onCompress'], 'prepareStep(memory, { onCompress })');
  let seen = 0;
  let added: string[] = [];

  const addNew = (fresh: readonly unknown[]) => {
    if (fresh.length === 0) return;
    mem.add(fresh as M[]);
    added.push(...keys(fresh));
  };

  const step = (async ({ messages, stepNumber }: PrepareStepInput<unknown>) => {
    if (!Array.isArray(messages)) {
      throw new AutoContextError('INVALID_ARGUMENT', 'prepareStep: `messages` must be an array', { field: 'messages' });
    }
    if (stepNumber === 0 || seen > messages.length) {
      added = [];
      const given = keys(messages);
      const working = keys(mem.messages());
      let known: number;
      if (working.length === 0) known = 0;
      else if (startsWith(given, working)) known = working.length;
      else {
        const original = keys(await mem.originalMessages());
        if (!startsWith(given, original)) {
          throw new AutoContextError(
            'INVALID_ARGUMENT',
            "prepareStep: the call's messages start neither with memory.messages() nor with the memory's original messages; " +
              'pass messages: memory.messages() to generateText / streamText',
            { field: 'messages' },
          );
        }
        known = original.length;
      }
      addNew(messages.slice(known));
    } else {
      addNew(messages.slice(seen));
    }
    seen = messages.length;
    const result = await mem.compressIfNeeded();
    if (result.compressed) options.onCompress?.(result);
    return { messages: mem.messages() };
  }) as AutoContextPrepareStep<M>;

  step.commit = (responseMessages: readonly unknown[]) => {
    const pending = new Map<string, number>();
    for (const k of added) pending.set(k, (pending.get(k) ?? 0) + 1);
    const rest: unknown[] = [];
    for (const m of responseMessages) {
      const k = keys([m])[0] as string;
      const n = pending.get(k) ?? 0;
      if (n > 0) pending.set(k, n - 1);
      else rest.push(m);
    }
    if (rest.length > 0) mem.add(rest as M[]);
    added = [];
    seen = 0;
  };
  step.onFinish = (event) => {
    const messages = event?.responseMessages ?? event?.response?.messages;
    if (!Array.isArray(messages)) {
      throw new AutoContextError(
        'INVALID_ARGUMENT',
        'prepareStep onFinish: the event has neither `responseMessages` (AI SDK 7) nor `response.messages` (AI SDK 6)',
        { field: 'responseMessages' },
      );
    }
    step.commit(messages);
  };
  return step;
}

/**
 * The tool's input schema, in the two shapes the AI SDK reads, built without importing `ai`: a
 * Standard Schema with a JSON-schema converter (`~standard`, how AI SDK 6 and later type tool
 * inputs) and the AI SDK's own schema object (what its `jsonSchema()` returns, marked with
 * `Symbol.for('vercel.ai.schema')`, which AI SDK 5 and later accept at run time).
 */
export interface ReloadInputSchema {
  /** The Standard Schema view. */
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: 'autocontext';
    readonly validate: (value: unknown) => { readonly value: ReloadArguments; readonly issues?: undefined } | { readonly issues: ReadonlyArray<{ readonly message: string }> };
    readonly jsonSchema: {
      readonly input: (options: { readonly target: string }) => Record<string, unknown>;
      readonly output: (options: { readonly target: string }) => Record<string, unknown>;
    };
    readonly types?: { readonly input: ReloadArguments; readonly output: ReloadArguments };
  };
  /** The JSON schema the model is shown. */
  readonly jsonSchema: Record<string, unknown>;
  /** Checks a model's arguments (the AI SDK's schema object view). */
  validate(value: unknown): { success: true; value: ReloadArguments } | { success: false; error: Error };
}

/** The ready `context_reload` tool {@link reloadTool} returns (what the AI SDK's `tool()` returns). */
export interface AiSdkReloadTool {
  /** What the tool does, for the model. */
  description: string;
  /** The arguments' schema: `working_context_offload_uuid` and an optional `page`. */
  inputSchema: ReloadInputSchema;
  /** Runs the reload and returns the text for the model. */
  execute(input: ReloadArguments, options?: unknown): Promise<string>;
}

const SCHEMA = Symbol.for('vercel.ai.schema');

function checkArguments(value: unknown): { success: true; value: ReloadArguments } | { success: false; error: Error } {
  const v = value as Partial<ReloadArguments> | null;
  if (v === null || typeof v !== 'object' || typeof v.working_context_offload_uuid !== 'string') {
    return { success: false, error: new TypeError('context_reload needs a string working_context_offload_uuid') };
  }
  if (v.page !== undefined && !(Number.isInteger(v.page) && (v.page as number) >= 1)) {
    return { success: false, error: new TypeError('context_reload: page must be a whole number from 1') };
  }
  return { success: true, value: v as ReloadArguments };
}

/**
 * The `context_reload` input schema in the shapes the AI SDK (and Mastra, which takes AI SDK
 * tools) reads, from the JSON schema of a memory's `reloadTool().inputSchema`: for building the
 * tool around a memory looked up per call, as `autocontext/mastra` does.
 */
export function reloadInputSchema(json: Record<string, unknown>): ReloadInputSchema {
  return {
    [SCHEMA]: true,
    _type: undefined,
    jsonSchema: json,
    validate: checkArguments,
    '~standard': {
      version: 1,
      vendor: 'autocontext',
      validate: (value: unknown) => {
        const r = checkArguments(value);
        return r.success ? { value: r.value } : { issues: [{ message: r.error.message }] };
      },
      jsonSchema: { input: () => json, output: () => json },
    },
  } as ReloadInputSchema;
}

/**
 * The `context_reload` tool for the AI SDK, ready to put in `tools` under the key
 * `context_reload`: the model calls it with the uuid of a `<!-- CONTEXT_OFFLOAD: uuid=... -->`
 * marker (and a `page` for long content) and reads back the original messages.
 *
 * @throws {@link AutoContextError} `INVALID_ARGUMENT` when `memory` is not a memory,
 *   `INVALID_CONFIG` for a memory of another format.
 */
export function reloadTool<M extends object = AiSdkMessage>(memory: AiSdkMemory<M>): AiSdkReloadTool {
  const mem = memory;
  requireAiSdk(mem, 'reloadTool');
  const def = mem.reloadTool() as unknown as { description: string; inputSchema: Record<string, unknown> };
  return {
    description: def.description,
    inputSchema: reloadInputSchema(def.inputSchema),
    execute: (input: ReloadArguments) => mem.handleReloadCall(input),
  };
}
