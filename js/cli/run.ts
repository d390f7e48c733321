/**
 * One conversation through the agent loop, as `compress` and `replay` run it: read and parse
 * the file, choose the store and the summarizer, replay.
 *
 * @module
 */

import { performance } from 'node:perf_hooks';

import { FsStore } from '../stores/fs.js';
import { MemoryStore } from '../stores/memory.js';
import type { RunOptions } from './args.js';
import { CountingStore } from './counting-store.js';
import { parseConversation, readInput, type Conversation } from './input.js';
import { replayConversation, type LoopResult } from './loop.js';
import { makeSummarizer, type SummarizerStats } from './summarizers.js';

/** The engine module (loaded once, after the command line is known to be right). */
export type Engine = typeof import('../entrypoints/node.js');

let engine: Promise<Engine> | undefined;

/** Loads the engine (the WebAssembly module) on first use. */
export function loadEngine(): Promise<Engine> {
  engine ??= import('../entrypoints/node.js');
  return engine;
}

/** What one run did. */
export interface Run {
  file: string;
  conversation: Conversation;
  loop: LoopResult;
  store: CountingStore;
  summarizer: SummarizerStats;
  timeMs: number;
}

/** Replays the conversation in `file` with the options; `onMessage` is told after each message. */
export async function runFile(file: string, o: RunOptions, onMessage?: (done: number, total: number) => void): Promise<Run> {
  const started = performance.now();
  const conversation = parseConversation(file, await readInput(file), o.format);
  const { AutoContextMemory, offlineSummarize, countTokens } = await loadEngine();
  const store = new CountingStore(o.store === undefined ? new MemoryStore() : new FsStore(o.store));
  const { summarize, stats } = makeSummarizer(o.summarizer, { offlineSummarize, countTokens: (t) => countTokens(t) });
  const settings: Parameters<typeof replayConversation>[2] = {
    format: conversation.format,
    formatFrom: conversation.formatFrom,
    maxToken: o.maxToken,
    ratio: o.ratio,
    store,
    prices: o.prices,
  };
  if (summarize !== undefined) settings.summarize = summarize;
  if (o.preset !== undefined) settings.preset = o.preset;
  if (o.concepts !== undefined) settings.concepts = o.concepts;
  const loop = await replayConversation(AutoContextMemory, conversation.messages, settings, onMessage);
  return { file, conversation, loop, store, summarizer: stats, timeMs: performance.now() - started };
}
