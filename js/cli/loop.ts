/**
 * The agent loop the commands replay: a conversation fed to a memory message by message, with
 * a compression pass before every model call (every model response) and once more at the
 * end, before the call that would come next. Beside it runs the same conversation never
 * compressed, which is what an agent without autocontext would have sent, and the bill of
 * both.
 *
 * @module
 */

import { performance } from 'node:perf_hooks';

import type { AutoContextMemory } from '../index.js';
import { isAutoContextError } from '../errors.js';
import type { AutoContextOptions, CompressionEvent, CompressResult, OffloadStore, SummarizeFn, WireMessage } from '../types.js';
import { InputError, UsageError } from './errors.js';
import { BillMeter, PRICES, type Bill, type Provider } from './bill.js';
import { isUserTurn, startsModelCall, type FormatName } from './format.js';
import { SummarizerUnavailable } from './openai.js';

/** A window far larger than any conversation: the uncompressed twin never compresses. */
export const MAX_WINDOW = 1_000_000_000;

/** How the loop's memory is made. */
export interface LoopSettings {
  format: FormatName;
  maxToken: number;
  ratio: number;
  preset?: string;
  /** Keywords of the concepts the facts step retrieves. */
  concepts?: string[];
  store: OffloadStore;
  summarize?: SummarizeFn;
  /** Where the format came from, for the message when the engine cannot read it. */
  formatFrom: 'option' | 'detected' | 'default';
  /** Whose prices the bill uses. */
  prices: Provider;
}

/** One model call of the replay: the request it sent. */
export interface ModelCall {
  /** Index, in the conversation, of the first message this call produced (or the length, for the next call). */
  message: number;
  /** Request tokens before the pass that preceded the call. */
  tokensBeforePass: number;
  /** Request tokens sent. */
  tokens: number;
  /** What an agent without autocontext would have sent. */
  tokensWithout: number;
  /** Whether the pass changed the working list. */
  compressed: boolean;
  /** The pass's events. */
  events: CompressionEvent[];
}

/** What the replay did. */
export interface LoopResult {
  memory: Memory;
  plain: Memory;
  /** Every model call, the final one (the next call, after the last message) included. */
  calls: ModelCall[];
  /** The last pass's result. */
  final: CompressResult;
  target: number;
  compressionMs: number;
  turns: { user: number; model: number; overWindow: number; overWindowWithout: number };
  largest: { tokens: number; tokensWithout: number };
  /** What the conversation's model calls cost with and without autocontext. */
  bill: Bill;
}

/** The commands read conversations of every format, so their memories take any wire message. */
type Memory = AutoContextMemory<FormatName, WireMessage>;
type MemoryClass = typeof AutoContextMemory;

/** A memory for the settings; the engine's refusals become the command's errors. */
function makeMemory(Engine: MemoryClass, s: LoopSettings): Memory {
  // The engine prices its edits as the bill does.
  const prices = { cacheRead: PRICES[s.prices].read, cacheWrite: PRICES[s.prices].write };
  const options: Record<string, unknown> = { format: s.format, maxToken: s.maxToken, tokenRatio: s.ratio, store: s.store, prices };
  if (s.summarize !== undefined) options.summarize = s.summarize;
  if (s.preset !== undefined) options.preset = s.preset;
  if (s.concepts !== undefined) options.concepts = s.concepts.map((keyword) => ({ keyword }));
  try {
    return new Engine<FormatName, WireMessage>(options as AutoContextOptions<FormatName, WireMessage>);
  } catch (e) {
    if (!isAutoContextError(e, 'INVALID_CONFIG')) throw e;
    if (e.field === 'format') {
      if (s.formatFrom === 'option') throw new UsageError(`--format ${s.format}: ${e.message}`);
      throw new InputError(`the conversation looks like the ${s.format} format, which this version cannot read (${e.message}); --format names another`);
    }
    if (e.field === 'preset') throw new UsageError(`--preset ${s.preset}: ${e.message}`);
    if (e.field?.startsWith('concepts')) throw new UsageError(`${e.message} (give each with --concept KEYWORD)`);
    throw new UsageError(`${e.code}: ${e.message}`);
  }
}

/** Replays `messages` as an agent loop would. `onMessage` is told after each message. */
export async function replayConversation(
  Engine: MemoryClass,
  messages: readonly WireMessage[],
  s: LoopSettings,
  onMessage?: (done: number, total: number) => void,
): Promise<LoopResult> {
  const memory = makeMemory(Engine, s);
  const plainOptions = { format: s.format, maxToken: MAX_WINDOW, msgThreshold: 10_000_000 };
  const plain = new Engine<FormatName, WireMessage>(plainOptions as AutoContextOptions<FormatName, WireMessage>);

  let compressionMs = 0;
  let target = Math.floor(s.maxToken * s.ratio);
  const calls: ModelCall[] = [];
  const turns = { user: 0, model: 0, overWindow: 0, overWindowWithout: 0 };
  const largest = { tokens: 0, tokensWithout: 0 };
  const meter = new BillMeter(s.format, s.maxToken, s.prices);

  const modelCall = async (index: number): Promise<CompressResult> => {
    const tokensBeforePass = memory.tokenCount();
    const t = performance.now();
    const result = await memory.compressIfNeeded();
    compressionMs += performance.now() - t;
    target = result.targetTokens;
    const unavailable = result.errors?.map((e) => e.cause).find((c) => c instanceof SummarizerUnavailable);
    if (unavailable) throw new InputError((unavailable as Error).message);
    calls.push({
      message: index,
      tokensBeforePass,
      tokens: memory.tokenCount(),
      tokensWithout: plain.tokenCount(),
      compressed: result.compressed,
      events: result.events,
    });
    return result;
  };

  for (const [i, message] of messages.entries()) {
    if (startsModelCall(message, messages[i - 1], s.format)) {
      // The agent is about to call the model: this is the request it sends.
      await modelCall(i);
      const call = calls[calls.length - 1]!;
      turns.model++;
      if (call.tokens > s.maxToken) turns.overWindow++;
      if (call.tokensWithout > s.maxToken) turns.overWindowWithout++;
      largest.tokens = Math.max(largest.tokens, call.tokens);
      largest.tokensWithout = Math.max(largest.tokensWithout, call.tokensWithout);
      meter.call(memory.messages(), messages.slice(0, i));
    } else if (isUserTurn(message, s.format)) {
      turns.user++;
    }
    memory.add(message);
    plain.add(message);
    onMessage?.(i + 1, messages.length);
  }
  // Before the next model call.
  const final = await modelCall(messages.length);
  return { memory, plain, calls, final, target, compressionMs, turns, largest, bill: meter.bill() };
}

/** The events of a run, by type: count, messages replaced, tokens saved. */
export interface EventSummary {
  type: string;
  count: number;
  messages: number;
  tokensSaved: number;
}

/** Sums events by type, in order of first appearance. */
export function summarizeEvents(events: readonly CompressionEvent[]): { count: number; tokensSaved: number; byType: EventSummary[] } {
  const byType = new Map<string, EventSummary>();
  for (const e of events) {
    const s = byType.get(e.type) ?? { type: e.type, count: 0, messages: 0, tokensSaved: 0 };
    s.count++;
    s.messages += e.messageCount;
    s.tokensSaved += e.tokensBefore - e.tokensAfter;
    byType.set(e.type, s);
  }
  const list = [...byType.values()];
  return { count: events.length, tokensSaved: list.reduce((a, s) => a + s.tokensSaved, 0), byType: list };
}
