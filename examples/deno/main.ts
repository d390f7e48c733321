/**
 * autocontext in Deno: an agent conversation kept inside a small context window, with the
 * originals of everything compressed in Deno KV.
 *
 * ```sh
 * npm install autocontext            # beside a package.json; Deno resolves it from node_modules
 * deno run --allow-read --unstable-kv main.ts            # an in-memory database
 * deno run --allow-read --allow-write --unstable-kv main.ts ./chat.kv   # a database file
 * ```
 *
 * The summarize function here is an offline stand-in (it keeps the first sentence of each
 * message); a real agent passes its own model call.
 *
 * @module
 */

import { AutoContextMemory, type CompressResult, type SummarizeRequest, type OpenAIMessage } from 'autocontext';
import { DenoKVStore } from 'autocontext/stores/deno-kv';

/** What {@link runExample} did. */
export interface ExampleReport {
  /** The memory, for a caller that wants to look further. */
  memory: AutoContextMemory;
  /** Every message added, in order. */
  sent: OpenAIMessage[];
  /** The result of each compression pass that changed something. */
  passes: CompressResult[];
  /** The model's context_reload call of the first offload, and the tool message answering it. */
  reload: { uuid: string; content: string } | null;
}

/** A stand-in for the host's model: the first sentence of each line of the span. */
export function offlineSummary({ prompt }: SummarizeRequest): string {
  const firsts = prompt
    .split('\n')
    .map((line) => line.trim().split(/(?<=[.!?])\s/)[0])
    .filter((line) => line.length > 0 && !line.startsWith('<'));
  return `Summary: ${firsts.slice(0, 12).join(' ').slice(0, 600)}`;
}

/** Deterministic text of about `chars` characters, like a file or a log an agent reads. */
function fileText(chars: number, seed: number): string {
  const words = ['parse', 'token', 'buffer', 'module', 'error', 'config', 'retry', 'stream', 'index', 'cache', 'mañana', '日本語', '🚀'];
  let out = '';
  for (let i = seed; out.length < chars; i = (i * 7 + 3) % 1009) out += words[i % words.length] + (i % 13 === 0 ? '.\n' : ' ');
  // Cut between characters, never inside a surrogate pair.
  return /[\ud800-\udbff]/.test(out[chars - 1] ?? '') ? out.slice(0, chars - 1) : out.slice(0, chars);
}

/** Round `n` of an agent reading files: a question, tool calls, their results, an answer. */
function round(n: number): OpenAIMessage[] {
  const ids = [`call_${n}_a`, `call_${n}_b`];
  return [
    { role: 'user', content: `Step ${n}: read the next two files and tell me what they configure.` },
    {
      role: 'assistant',
      content: null,
      tool_calls: ids.map((id, k) => ({ id, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: `conf/part${n}_${k}.toml` }) } })),
    },
    // Every fourth step reads a file far over Deno KV's 64 KiB value limit.
    { role: 'tool', tool_call_id: ids[0], content: fileText(n % 4 === 0 ? 90_000 : 4_000, n) },
    { role: 'tool', tool_call_id: ids[1], content: fileText(3_000, n + 100) },
    { role: 'assistant', content: `Files of step ${n} configure the parser and its cache.` },
  ];
}

/**
 * Adds `rounds` rounds to a memory storing offloads in `kv`, compressing after each, then plays
 * the model asking for the first offload back with context_reload.
 */
export async function runExample(
  kv: Deno.Kv,
  { rounds = 12, sessionId = 'deno-example', log = console.log }: { rounds?: number; sessionId?: string; log?: (line: string) => void } = {},
): Promise<ExampleReport> {
  const memory = new AutoContextMemory({ maxToken: 8_000, sessionId, store: new DenoKVStore(kv), summarize: offlineSummary });
  const sent: OpenAIMessage[] = [];
  const passes: CompressResult[] = [];
  for (let n = 1; n <= rounds; n++) {
    const messages = round(n);
    memory.add(messages);
    sent.push(...messages);
    const result = await memory.compressIfNeeded();
    if (result.compressed) {
      passes.push(result);
      log(`step ${n}: ${result.tokensBefore} -> ${result.tokensAfter} tokens (${result.events.map((e) => e.type).join(', ')})`);
    }
  }
  log(`${sent.length} messages sent; the model sees ${memory.messages().length} (${memory.tokenCount()} tokens), ${memory.offloads().length} offloads in Deno KV`);

  const uuid = JSON.stringify(memory.messages()).match(/<!-- CONTEXT_OFFLOAD: uuid=([0-9a-f-]{36}) -->/)?.[1];
  if (uuid === undefined) return { memory, sent, passes, reload: null };
  const content = await memory.handleReloadCall({
    id: 'call_reload',
    type: 'function',
    function: { name: 'context_reload', arguments: JSON.stringify({ working_context_offload_uuid: uuid }) },
  });
  log(`context_reload(${uuid}) -> ${content.length} characters: ${JSON.stringify(content.slice(0, 70))}...`);
  return { memory, sent, passes, reload: { uuid, content } };
}

if (import.meta.main) {
  const kv = await Deno.openKv(Deno.args[0] ?? ':memory:');
  try {
    await runExample(kv);
  } finally {
    kv.close();
  }
}
