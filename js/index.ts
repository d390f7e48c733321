/**
 * autocontext: keeps an LLM agent's conversation inside its context window.
 *
 * ```js
 * import { AutoContextMemory } from 'autocontext';
 * import { MemoryStore } from 'autocontext/stores/memory';
 *
 * const memory = new AutoContextMemory({ maxToken: 128_000, store: new MemoryStore(), summarize });
 * memory.add(messages);
 * await memory.compressIfNeeded();
 * const request = { messages: memory.messages(), tools: [...tools, memory.reloadTool()] };
 * ```
 *
 * This module is the public API: the class ({@link AutoContextMemory}, in memory.ts), the
 * stateless functions (stateless.ts), the errors and the types. The engine is the WebAssembly
 * build of the Rust core, which each runtime's entry point initializes before this module is used.
 *
 * @module
 */

export { AutoContextMemory } from './memory.js';
export { compress, countTokens, handleReloadCall, reload, validate } from './stateless.js';
export type * from './types.js';
export { AutoContextError, isAutoContextError } from './errors.js';
export type { AutoContextErrorOptions, ErrorCode } from './errors.js';
export { MemoryStore } from './stores/memory.js';
export { offlineSummarize } from './offline-summarize.js';
export type { OfflineSummarizeRequest } from './offline-summarize.js';
