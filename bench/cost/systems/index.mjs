// Every system the cost benchmark replays, in report order. Each family's module (and the
// packages it imports) is loaded only when one of its systems is picked, so a run of one system
// starts in well under a second.

const FAMILIES = {
  autocontext: {
    ids: ['default', 'prefix-summary', 'facts', 'turns', 'default-minfreed-4000', 'default-cache', ...[1000, 1500, 3000, 5000, 10000].map((l) => `default-limit-${l}`)],
    load: async () => (await import('./autocontext.mjs')).AUTOCONTEXT_SYSTEMS,
  },
  langchain: {
    ids: ['langchain-summarization-20', 'langchain-summarization-4k', 'langchain-trim', 'langchain-context-editing'],
    load: async () => (await import('./langchain.mjs')).LANGCHAIN_SYSTEMS,
  },
  mastra: { ids: ['mastra-token-limiter', 'mastra-toolcallfilter-token-limiter'], load: async () => (await import('./mastra.mjs')).MASTRA_SYSTEMS },
  strands: {
    ids: ['strands-auto', 'strands-auto-75', 'strands-summarizing', 'strands-summarizing-75', 'strands-sliding', 'strands-sliding-75'],
    load: async () => (await import('./strands.mjs')).STRANDS_SYSTEMS,
  },
  baseline: { ids: ['masking-10', 'raw'], load: async () => (await import('./baselines.mjs')).BASELINE_SYSTEMS },
};

/** Every system id, in report order. */
export const SYSTEM_IDS = Object.values(FAMILIES).flatMap((f) => f.ids);

/** The systems whose id is in `ids` (all when empty), loaded; an unknown id is an error naming the known ones. */
export async function pickSystems(ids = []) {
  for (const id of ids) {
    if (!SYSTEM_IDS.includes(id)) throw new Error(`unknown system ${JSON.stringify(id)}; known: ${SYSTEM_IDS.join(', ')}`);
  }
  const wanted = ids.length === 0 ? SYSTEM_IDS : SYSTEM_IDS.filter((id) => ids.includes(id));
  const out = [];
  for (const family of Object.values(FAMILIES)) {
    if (!family.ids.some((id) => wanted.includes(id))) continue;
    out.push(...(await family.load()).filter((s) => wanted.includes(s.id)));
  }
  return out;
}
