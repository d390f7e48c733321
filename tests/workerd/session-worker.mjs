// A Worker whose Durable Object runs two writers on one session inside workerd: two memories
// restored from the same DurableObjectSessionStore state, each running a turn with a pass,
// saved at once; at /sweep, a fenced sweep after a stale writer (tests/contract). Bundled by
// worker.test.mjs; the object answers JSON.
import { DurableObject } from 'cloudflare:workers';
import { AutoContextMemory } from 'autocontext';
import { CloudflareKVStore } from 'autocontext/stores/cloudflare-kv';
import { DurableObjectSessionStore } from 'autocontext/stores/durable-object';
import { fencedSweep, toolRound } from '../contract/fenced-sweep.mjs';

export class Sessions extends DurableObject {
  async twoWriters() {
    const sessions = new DurableObjectSessionStore(this.ctx.storage);
    const host = { store: new CloudflareKVStore(this.env.KV, { prefix: 'offloads/' }) };
    const first = new AutoContextMemory({ sessionId: 'two', maxToken: 6000, ...host });
    first.add(toolRound(0, 1000));
    const out = { first: await first.save(sessions) };
    const a = await AutoContextMemory.load(sessions, 'two', host);
    const b = await AutoContextMemory.load(sessions, 'two', host);
    for (const [m, k] of [[a, 1], [b, 50]]) {
      for (let n = k; n < k + 4; n++) m.add(toolRound(n, 1500));
      await m.compressIfNeeded();
    }
    const results = await Promise.allSettled([a.save(sessions), b.save(sessions)]);
    out.statuses = results.map((r) => r.status);
    out.codes = results.map((r) => r.reason?.code ?? null);
    const winner = results[0].status === 'fulfilled' ? a : b;
    const back = await AutoContextMemory.load(sessions, 'two', host);
    out.revision = back.revision;
    out.sameAsWinner = JSON.stringify((await back.originalMessages())) === JSON.stringify((await winner.originalMessages()));
    out.offloads = back.offloads().length;
    out.reloaded = 0;
    for (const o of back.offloads()) if ((await back.reload(o.uuid)).length > 0) out.reloaded += 1;
    // Each request's memory disposed of before the answer (Symbol.dispose, as `using` calls
    // it): refused afterwards, and the session loads again whole.
    const working = JSON.stringify(back.messages());
    for (const m of [a, b]) m.dispose();
    back[Symbol.dispose]();
    try {
      back.messages();
      out.disposed = 'used';
    } catch (e) {
      out.disposed = e.code;
    }
    const again = await AutoContextMemory.load(sessions, 'two', host);
    out.againSame = again.revision === out.revision && JSON.stringify(again.messages()) === working;
    again.dispose();
    // A state over the 128 KiB value limit is split into parts and read back whole.
    const big = 'é𝄞 state '.repeat(60_000);
    await sessions.save('big', { revision: 1, state: big });
    out.bigBack = (await sessions.load('big')).state === big;
    await sessions.save('big', { revision: 2, state: 'small' });
    out.bigKeys = (await this.ctx.storage.list({ prefix: 'session:big:' })).size;
    try {
      await sessions.save('big', { revision: 2, state: 'stale' });
      out.stale = 'saved';
    } catch (e) {
      out.stale = e.code;
    }
    return out;
  }

  /** The session in this object's storage, the offloads in KV. */
  async sweep() {
    const store = new CloudflareKVStore(this.env.KV, { prefix: 'offloads/' });
    return fencedSweep(AutoContextMemory, new DurableObjectSessionStore(this.ctx.storage), store, 'sweep');
  }
}

export default {
  async fetch(request, env) {
    const stub = env.SESSIONS.get(env.SESSIONS.idFromName('one'));
    return Response.json(new URL(request.url).pathname === '/sweep' ? await stub.sweep() : await stub.twoWriters());
  },
};
