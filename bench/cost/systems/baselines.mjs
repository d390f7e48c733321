// The two baselines: the raw agent (every message, as added) and observation masking, the
// baseline of Lindenbauer et al. 2025, "The Complexity Trap" (SWE-agent on SWE-bench Verified):
// the content of every tool result but the last ten is replaced with a short placeholder.

export const MASK_KEEP = 10;
export const MASK_PLACEHOLDER = '[Old tool output omitted for brevity.]';

const raw = {
  id: 'raw',
  label: 'raw agent, no management',
  family: 'baseline',
  peer: false,
  start: () => {
    const messages = [];
    return {
      add: (m) => messages.push(m),
      request: async () => ({ messages: messages.slice(), pass: null }),
      reloaded: async () => [],
    };
  },
};

const masking = {
  id: 'masking-10',
  label: 'observation masking, last 10 tool results kept',
  family: 'baseline',
  peer: true,
  start: ({ clock }) => {
    const messages = [];
    const masked = new WeakMap();
    const mask = (m) => {
      let x = masked.get(m);
      if (x === undefined) {
        x = { ...m, content: MASK_PLACEHOLDER };
        masked.set(m, x);
      }
      return x;
    };
    return {
      add: (m) => messages.push(m),
      async request() {
        const out = await clock.time(() => {
          let tools = 0;
          const list = new Array(messages.length);
          for (let i = messages.length - 1; i >= 0; i--) {
            const m = messages[i];
            list[i] = m.role === 'tool' && ++tools > MASK_KEEP ? mask(m) : m;
          }
          return list;
        });
        return { messages: out, pass: null };
      },
      reloaded: async () => [],
    };
  },
};

export const BASELINE_SYSTEMS = [masking, raw];
