// A Worker that makes a memory in its global scope, where workerd gives no random values, and
// again in its request handler. Bundled by worker.test.mjs; it answers JSON of both outcomes.
import { AutoContextMemory, isAutoContextError } from 'autocontext';

/** What making a memory and adding a message did: the error's parts, or the messages. */
function attempt() {
  try {
    const memory = new AutoContextMemory({ maxToken: 4_000, sessionId: 'global' });
    memory.add({ role: 'user', content: 'hello' });
    const out = { ok: true, messages: memory.messages().length };
    memory.dispose();
    return out;
  } catch (e) {
    return { ok: false, isAutoContextError: isAutoContextError(e), code: e?.code, message: e?.message, cause: e?.cause?.message ?? null };
  }
}

const atStartup = attempt();

export default {
  async fetch() {
    return Response.json({ atStartup, inRequest: attempt() });
  },
};
