// A Cloudflare Worker that keeps each agent conversation inside its context window.
//
// One Durable Object per conversation holds its memory (persisted with toJSON/fromJSON in the
// object's own storage, so it survives eviction and restarts); the originals of everything
// compressed, and the log of every message added, go to a Workers KV namespace through
// autocontext's CloudflareKVStore.
//
//   POST /conversations/:id/messages         { "messages": [...] }  add, compress if needed
//   GET  /conversations/:id/messages         the working list to send, and the tools to add
//   POST /conversations/:id/reload           a context_reload tool call → the tool message
//   GET  /conversations/:id/offloads/:uuid   the original messages of one offload
//   GET  /tokens?text=...                    count tokens (o200k_base)
//
// Messages are in the OpenAI chat-completions format. Errors are JSON
// `{ "error": { "code", "message" } }` with autocontext's stable codes.

import { DurableObject } from 'cloudflare:workers';
import { AutoContextMemory, countTokens, isAutoContextError } from 'autocontext';
import { CloudflareKVStore } from 'autocontext/stores/cloudflare-kv';

/** UTF-16 code units per stored part of a memory's state: well under the 2 MB value limit. */
const PART_UNITS = 400_000;

/** How many of the newest offloads a POST's answer names. */
const NEWEST_OFFLOADS = 8;

/** Conversation ids the Worker accepts in its URLs. */
const CONVERSATION_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The summarize function: the configured OpenAI model when a key is set, otherwise none, and
 * autocontext runs only the steps that need no model.
 */
function summarizer(env) {
  if (!env.OPENAI_API_KEY) return undefined;
  return async ({ system, prompt, signal }) => {
    const response = await fetch('https://api.openai.com/v1/chat/completions', {
      method: 'POST',
      signal,
      headers: { authorization: `Bearer ${env.OPENAI_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: env.SUMMARY_MODEL || 'gpt-4o-mini',
        messages: [
          { role: 'system', content: system },
          { role: 'user', content: prompt },
        ],
      }),
    });
    if (!response.ok) throw new Error(`the summary model answered ${response.status}: ${await response.text()}`);
    const data = await response.json();
    return {
      text: data.choices[0].message.content,
      usage: { inputTokens: data.usage?.prompt_tokens, outputTokens: data.usage?.completion_tokens },
    };
  };
}

/** What a Durable Object method returns for an autocontext error; anything else is rethrown. */
function failure(e) {
  if (!isAutoContextError(e)) throw e;
  const error = { code: e.code, message: e.message };
  if (e.field !== undefined) error.field = e.field;
  if (e.index !== undefined) error.index = e.index;
  return { error };
}

/** One conversation: its memory, persisted in this object's storage. */
export class Conversation extends DurableObject {
  /** @type {AutoContextMemory | null} */
  #memory = null;
  #queue = Promise.resolve();

  /** Runs `fn` after every operation started before it: one change at a time. */
  #serial(fn) {
    const run = this.#queue.then(fn);
    this.#queue = run.catch(() => {});
    return run;
  }

  #host() {
    return {
      store: new CloudflareKVStore(this.env.OFFLOADS, { prefix: 'offloads/' }),
      summarize: summarizer(this.env),
    };
  }

  /** The memory, restored from storage the first time this instance needs it. */
  async #open() {
    if (this.#memory !== null) return this.#memory;
    const count = await this.ctx.storage.get('state:parts');
    if (count === undefined) {
      this.#memory = new AutoContextMemory({
        ...this.#host(),
        maxToken: Number(this.env.MAX_TOKEN ?? 128_000),
        sessionId: this.ctx.id.toString(),
      });
    } else {
      const keys = Array.from({ length: count }, (_, i) => `state:${i}`);
      const parts = await this.ctx.storage.get(keys);
      this.#memory = AutoContextMemory.fromJSON(keys.map((k) => parts.get(k)).join(''), this.#host());
    }
    return this.#memory;
  }

  /**
   * Writes the memory's state, split into parts, in one atomic put. The log of the messages
   * added since the last save goes to KV first, so the state stays the size of the working
   * list however long the conversation; if that write fails, those messages stay in the state
   * and the next save writes them.
   */
  async #save(memory) {
    await memory.flush().catch(() => {});
    const json = JSON.stringify(memory.toJSON());
    const entries = {};
    let count = 0;
    for (let at = 0; at < json.length || count === 0; at += PART_UNITS) entries[`state:${count++}`] = json.slice(at, at + PART_UNITS);
    const before = (await this.ctx.storage.get('state:parts')) ?? 0;
    entries['state:parts'] = count;
    await this.ctx.storage.put(entries);
    if (before > count) await this.ctx.storage.delete(Array.from({ length: before - count }, (_, i) => `state:${count + i}`));
  }

  /** Runs a change; if it fails, drops the memory so the next call restores the stored one. */
  #change(fn) {
    return this.#serial(async () => {
      try {
        return await fn(await this.#open());
      } catch (e) {
        this.#memory?.dispose();
        this.#memory = null;
        return failure(e);
      }
    });
  }

  /** Adds messages, compresses if needed, and persists the result. */
  addMessages(messages) {
    return this.#change(async (memory) => {
      memory.add(messages);
      const result = await memory.compressIfNeeded();
      await this.#save(memory);
      const offloads = memory.offloads();
      return {
        compressed: result.compressed,
        tokensBefore: result.tokensBefore,
        tokensAfter: result.tokensAfter,
        events: result.events.map((e) => ({ type: e.type, messageCount: e.messageCount, offloadUuid: e.offloadUuid })),
        messageCount: memory.messages().length,
        tokenCount: memory.tokenCount(),
        // How many offloads the state holds (those the working list names and the 256 most
        // recent; older ones are retired to KV and still reload) and the newest few, so the
        // answer stays small however long the conversation.
        offloadCount: offloads.length,
        offloads: offloads.slice(-NEWEST_OFFLOADS),
      };
    });
  }

  /** The working list to send to the model, and the context_reload tool to offer it. */
  messages() {
    return this.#serial(async () => {
      const memory = await this.#open();
      return { messages: memory.messages(), tools: [memory.reloadTool()] };
    });
  }

  /** Executes the model's context_reload call; returns the tool message answering it. */
  reloadCall(toolCall) {
    return this.#serial(async () => {
      try {
        const memory = await this.#open();
        const content = await memory.handleReloadCall(toolCall);
        return { message: { role: 'tool', tool_call_id: toolCall?.id ?? null, content } };
      } catch (e) {
        return failure(e);
      }
    });
  }

  /** The original messages of one offload. */
  offload(uuid) {
    return this.#serial(async () => {
      try {
        return { messages: await (await this.#open()).reload(uuid) };
      } catch (e) {
        return failure(e);
      }
    });
  }
}

const STATUS = { NOT_FOUND: 404, STORE_FAILED: 502, SUMMARIZE_FAILED: 502, TOKENIZER_FAILED: 500 };

function json(body, status = 200) {
  return Response.json(body, { status });
}

function reply(result) {
  if (result?.error) return json(result, STATUS[result.error.code] ?? 400);
  return json(result);
}

async function body(request) {
  try {
    return { value: await request.json() };
  } catch (e) {
    return { error: json({ error: { code: 'INVALID_ARGUMENT', message: `the request body is not JSON: ${e.message}` } }, 400) };
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const path = url.pathname.split('/').filter(Boolean);

    if (path.length === 1 && path[0] === 'tokens' && request.method === 'GET') {
      return json({ tokens: countTokens(url.searchParams.get('text') ?? '') });
    }
    if (path[0] !== 'conversations' || path.length < 3 || !CONVERSATION_ID.test(path[1])) {
      return json({ error: { code: 'NOT_FOUND', message: 'no such route' } }, 404);
    }
    const conversation = env.CONVERSATIONS.get(env.CONVERSATIONS.idFromName(path[1]));
    const route = `${request.method} ${path.slice(2, 3).join('/')}${path.length > 3 ? '/:x' : ''}`;
    switch (route) {
      case 'POST messages': {
        const { value, error } = await body(request);
        if (error) return error;
        return reply(await conversation.addMessages(Array.isArray(value) ? value : value?.messages));
      }
      case 'GET messages':
        return reply(await conversation.messages());
      case 'POST reload': {
        const { value, error } = await body(request);
        if (error) return error;
        return reply(await conversation.reloadCall(value));
      }
      case 'GET offloads/:x':
        if (path.length !== 4) break;
        return reply(await conversation.offload(decodeURIComponent(path[3])));
    }
    return json({ error: { code: 'NOT_FOUND', message: 'no such route' } }, 404);
  },
};
