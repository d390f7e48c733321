// Type-checked (never run) against the installed package's declarations: the public API as a
// TypeScript user writes it, under both Node and bundler module resolution.
import { AutoContextMemory, AutoContextError, compress, countTokens, isAutoContextError, validate } from 'autocontext';
import type { CompressResult, CompressionEvent, OffloadStore, SummarizeFn, ValidationProblem } from 'autocontext';
import { MemoryStore } from 'autocontext/stores/memory';

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
const memory = new AutoContextMemory<ChatMessage>({ maxToken: 8_000, summarize, store, tokenizer: (t) => t.length });
memory.add({ role: 'user', content: 'hi' });
memory.add([{ role: 'assistant', content: 'hello' }]);
const working: ChatMessage[] = memory.messages();
const pass: Promise<CompressResult> = memory.compressIfNeeded();
const events: CompressionEvent[] = memory.events();
const problems: ValidationProblem[] = validate(working);
const restored: AutoContextMemory<ChatMessage> = AutoContextMemory.fromJSON<ChatMessage>(memory.toJSON(), { store, summarize });
const n: number = countTokens('hello', 'estimate') + restored.tokenCount();
const name: string = memory.reloadTool().function.name;
const reloaded: Promise<ChatMessage[]> = memory.reload('uuid');
const answer: Promise<string> = memory.handleReloadCall({ working_context_offload_uuid: 'uuid' });
const once = compress(working, { maxToken: 1_000 }).then((out) => out.messages.length + out.events.length);
try {
  memory.add({ role: 'user', content: 'x' });
} catch (e) {
  if (isAutoContextError(e, 'INVALID_MESSAGE')) console.log(e.code, e.index, e.field, e.cause);
  if (e instanceof AutoContextError) console.log(e.message);
}

// @ts-expect-error not a tokenizer name
new AutoContextMemory({ tokenizer: 'gpt2' });
// @ts-expect-error maxToken is a number
new AutoContextMemory({ maxToken: '8000' });
// @ts-expect-error not a message of this memory's type
memory.add({ role: 'robot', content: 'beep' });

export { pass, events, problems, n, name, reloaded, answer, once };
