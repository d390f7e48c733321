// The long-session stream both long-session benches replay: the corpus traces back to back as
// one conversation, one system message, call ids made unique per repetition.
import { traces } from './texts.mjs';

/** The corpus traces long enough to replay (over 10 messages); empty without a corpus. */
export function longTraces() {
  return traces().filter((t) => t.messages.length > 10);
}

/** Whether every call of a group's assistant message has its result in the group (a trace may end mid-call). */
function answered(group) {
  const results = new Set(group.filter((m) => m.role === 'tool').map((m) => m.tool_call_id));
  return (group[0].tool_calls ?? []).every((c) => results.has(c.id));
}

/**
 * The corpus as an endless stream of groups added at once: a message, or an assistant message
 * with the tool results that answer it (so a group the engine refuses leaves no call open).
 * Call ids are unique per repetition.
 */
export function* stream(corpus = longTraces()) {
  for (let rep = 0; ; rep++) {
    for (const [t, trace] of corpus.entries()) {
      const tag = `r${rep}t${t}_`;
      let group = [];
      for (const m of trace.messages) {
        if (m.role === 'system' && (rep > 0 || t > 0)) continue;
        const out = { ...m };
        if (Array.isArray(m.tool_calls)) out.tool_calls = m.tool_calls.map((c) => ({ ...c, id: tag + c.id }));
        if (typeof m.tool_call_id === 'string') out.tool_call_id = tag + m.tool_call_id;
        if (m.role !== 'tool' && group.length > 0) {
          if (answered(group)) yield group;
          group = [];
        }
        group.push(out);
      }
      if (group.length > 0 && answered(group)) yield group;
    }
  }
}

/** Checkpoints up to `limit` (message counts), `limit` itself always last. */
export function checkpoints(limit, marks) {
  const out = marks.filter((n) => n < limit);
  out.push(limit);
  return out;
}
