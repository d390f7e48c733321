// A Worker that runs the guarantees of every wire format (tests/contract/format-contract.mjs)
// inside workerd. Bundled by worker.test.mjs the way a Worker build bundles; it answers JSON.
import { AutoContextMemory, validate } from 'autocontext';
import { MemoryStore } from 'autocontext/stores/memory';
import { runFormatContract } from '../contract/format-contract.mjs';

export default {
  async fetch(request) {
    const { pathname } = new URL(request.url);
    if (pathname === '/formats') return Response.json(await runFormatContract({ AutoContextMemory, validate, MemoryStore }));
    return new Response('not found', { status: 404 });
  },
};
