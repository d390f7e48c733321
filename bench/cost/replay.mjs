// Replays one trace against one system as an agent loop: messages are added in order; at every
// model turn (each assistant message of the trace) the system produces the request it would
// send, which the ledger accounts; then the assistant message and what follows are added. After
// the last message the system produces one more request, the next call's, which only serves
// the recoverability figure. Each request is also scored for later-use retention (./retention.mjs)
// against what the recorded agent wrote next, outside the system's CPU clock.
import { Ledger, recoverable } from '../../js/accounting.js';
import { CpuClock } from './clock.mjs';
import { RETENTION_KEYS, Retention, laterLines, laterUse, messageText, offloadMarkers } from './retention.mjs';
import { SummarizerLog } from './summarizer.mjs';

const median = (xs) => (xs.length === 0 ? null : [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]);

/**
 * @param system   one of ./systems; its session's optional `reloadOne(uuid)` gives the originals
 *                 behind one offload marker (the retention's one reload), and its optional
 *                 `markersOf(text)` the markers a text names (default: autocontext's)
 * @param trace    `{ name, messages }`
 * @param env      `{ lib, window, ratio, countText, peerCountText, validate, provider }`: `provider`
 *                 is whose prices autocontext's systems are told (the ledger prices both)
 */
export async function replayTrace(system, trace, env) {
  const log = new SummarizerLog();
  const clock = new CpuClock();
  // The part of the management CPU a peer spends in the token counter the benchmark gives it.
  const countClock = new CpuClock();
  const session = await system.start({ lib: env.lib, window: env.window, ratio: env.ratio, provider: env.provider, log, clock, countClock, countText: env.peerCountText, trace });
  const ledger = new Ledger({ countText: env.countText, window: env.window, validate: env.validate });
  const used = laterUse(trace.messages);
  const lines = laterLines(trace.messages);
  const retention = new Retention(session.reloadOne, session.markersOf);
  const passes = [];
  const errors = [];
  let countMismatches = 0;
  let newest;
  for (const [i, message] of trace.messages.entries()) {
    if (message.role === 'assistant' && i > 0) {
      const out = await session.request();
      const record = ledger.turn(out.messages, newest);
      log.sent(out.messages);
      await retention.turn(used.get(i), out.messages, lines.get(i));
      if (out.ownCount !== undefined && out.ownCount !== record.tokens) countMismatches++;
      if (out.error && errors.length < 3) errors.push({ turn: ledger.turns.length - 1, error: out.error });
      if (out.pass) passes.push({ turn: ledger.turns.length - 1, ...out.pass, firstChanged: record.firstChanged, messages: record.messages, tokens: record.tokens });
    }
    session.add(message);
    newest = message;
  }
  const cpuMs = clock.ms;
  const counterCpuMs = countClock.ms;
  const summarizer = log.drain(env.countText);
  const next = await session.request();
  const reloaded = await session.reloaded(next.messages);
  const kept = recoverable(trace.messages, next.messages, reloaded);
  // The same with one reload of each marker the request names, not followed further.
  const oneReload = [];
  if (session.reloadOne !== undefined) {
    const markersOf = session.markersOf ?? offloadMarkers;
    for (const uuid of new Set(next.messages.flatMap((m) => markersOf(messageText(m))))) oneReload.push(...(await session.reloadOne(uuid).catch(() => [])));
  }
  const keptInOne = recoverable(trace.messages, next.messages, oneReload);
  const t = ledger.totals;
  return {
    trace: trace.name,
    messages: trace.messages.length,
    ...t,
    summarizerCalls: summarizer.calls,
    summarizerInput: summarizer.input,
    summarizerCached: summarizer.cachedInput,
    summarizerOutput: summarizer.output,
    originals: kept.originals,
    recoverable: kept.recoverable,
    recoverableInOne: keptInOne.recoverable,
    ...retention.totals,
    cpuMs,
    counterCpuMs,
    countMismatches,
    invalidExamples: ledger.invalidExamples,
    errors,
    passes: passes.length,
    medianFreed: median(passes.filter((p) => p.freed !== undefined).map((p) => p.freed)),
    firstChanged: median(ledger.turns.filter((x) => x.rewrite).map((x) => x.firstChanged)),
    passList: passes,
    turnList: ledger.turns.map((x) => [x.tokens, x.prefixTokens, x.messages, x.firstChanged]),
  };
}

/** Sums per-trace results into a system's totals. */
export function sumTraces(rows) {
  const keys = [
    'turns',
    'plain',
    'anthropic',
    'openai',
    'cachedTokens',
    'rewrites',
    'overWindow',
    'invalid',
    'empty',
    'newestDropped',
    'newestAltered',
    'summarizerCalls',
    'summarizerInput',
    'summarizerCached',
    'summarizerOutput',
    'originals',
    'recoverable',
    'recoverableInOne',
    ...RETENTION_KEYS,
    'cpuMs',
    'counterCpuMs',
    'countMismatches',
    'passes',
  ];
  const out = Object.fromEntries(keys.map((k) => [k, rows.reduce((s, r) => s + (r[k] ?? 0), 0)]));
  out.maxTokens = Math.max(0, ...rows.map((r) => r.maxTokens));
  out.traces = rows.length;
  return out;
}
