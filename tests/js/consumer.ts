// Type-checked (never run) against the installed package's declarations: the public API as a
// TypeScript user writes it, under both Node and bundler module resolution.
import { AutoContextMemory, AutoContextError, compress, countTokens, isAutoContextError, validate } from 'autocontext';
import type { CompressResult, CompressionEvent, OffloadStore, SummarizeFn, SweepReport, ValidationProblem } from 'autocontext';
import { MemorySessionStore, MemoryStore } from 'autocontext/stores/memory';
import { CloudflareKVStore } from 'autocontext/stores/cloudflare-kv';
import { DenoKVStore } from 'autocontext/stores/deno-kv';

interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_call_id?: string;
}

const summarize: SummarizeFn<ChatMessage> = async ({ kind, prompt, messages, signal }) => ({
  text: `${kind}: ${prompt.length} chars, ${messages[0]?.role}, aborted ${signal.aborted}`,
  usage: { inputTokens: 1, outputTokens: 1 },
});
const store: OffloadStore = new MemoryStore();
// A host type of its own for the messages: the format first, then the type.
const memory = new AutoContextMemory<'openai', ChatMessage>({ maxToken: 8_000, summarize, store, tokenizer: (t) => t.length });
memory.add({ role: 'user', content: 'hi' });
memory.add([{ role: 'assistant', content: 'hello' }]);
const working: ChatMessage[] = memory.messages();
const pass: Promise<CompressResult> = memory.compressIfNeeded();
const events: CompressionEvent[] = memory.events();
const problems: ValidationProblem[] = validate(working);
const bodyProblems: ValidationProblem[] = validate(working, 'openai', { request: true });
memory.add({ role: 'user', content: 'the task' }, { pinned: true });
memory.pin(0);
memory.unpin(0);
const pinnedAt: number[] = memory.pinned();
const restored: AutoContextMemory<'openai', ChatMessage> = AutoContextMemory.fromJSON<'openai', ChatMessage>(memory.toJSON(), { store, summarize });
const n: number = countTokens('hello', 'estimate') + restored.tokenCount();
const disposed: void = restored.dispose();
const name: string = memory.reloadTool().function.name;
const reloaded: Promise<ChatMessage[]> = memory.reload('uuid');
const answer: Promise<string> = memory.handleReloadCall({ working_context_offload_uuid: 'uuid' });
const once = compress<'openai', ChatMessage>(working, { maxToken: 1_000 }).then((out) => out.messages.length + out.events.length);
try {
  memory.add({ role: 'user', content: 'x' });
} catch (e) {
  if (isAutoContextError(e, 'INVALID_MESSAGE')) console.log(e.code, e.index, e.field, e.cause);
  if (e instanceof AutoContextError) console.log(e.message);
}

// A Workers KV binding, shaped as Cloudflare's KVNamespace type declares it (overloaded get,
// a list result that is a union), is accepted as it is.
declare const binding: {
  get(key: string, type: 'text'): Promise<string | null>;
  get(key: string, type: 'json'): Promise<unknown>;
  put(key: string, value: string | ArrayBuffer | ArrayBufferView | ReadableStream, options?: { expiration?: number; expirationTtl?: number; metadata?: unknown }): Promise<void>;
  delete(key: string): Promise<void>;
  list(options?: { prefix?: string | null; limit?: number; cursor?: string | null }): Promise<
    { list_complete: false; keys: { name: string; expiration?: number }[]; cursor: string } | { list_complete: true; keys: { name: string }[] }
  >;
};
const kvStore: OffloadStore = new CloudflareKVStore(binding, { prefix: 'offloads/', expirationTtl: 86_400 });
const kvKeys: Promise<string[]> = new CloudflareKVStore(binding).keys('chat-1/');
declare const denoKv: import('autocontext/stores/deno-kv').DenoKvLike;
const denoStore: OffloadStore = new DenoKVStore(denoKv, { prefix: 'autocontext' });

// Clean-up: what this memory abandoned, and with the session store, what a killed writer left.
const swept: Promise<SweepReport> = memory.sweep();
const fenced: Promise<string[]> = memory.sweep({ sessions: new MemorySessionStore() }).then((r) => r.orphans);
// @ts-expect-error the session store, not its name
memory.sweep({ sessions: 'chat-1' });

// @ts-expect-error not a tokenizer name
new AutoContextMemory({ tokenizer: 'gpt2' });
// @ts-expect-error maxToken is a number
new AutoContextMemory({ maxToken: '8000' });
// @ts-expect-error not a message of this memory's type
memory.add({ role: 'robot', content: 'beep' });

export { pass, events, problems, bodyProblems, pinnedAt, n, name, reloaded, answer, once, kvStore, kvKeys, denoStore, swept, fenced };
