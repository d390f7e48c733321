// The cost benchmark's section of docs/benchmarks.md (and of `node bench/cost.mjs`'s output):
// the targets for autocontext's default preset, the table of every system (cost beside
// later-use retention, ./retention.mjs), the default preset's figures per trace, and how each
// system was driven. Ratios come from one run.
import { PRICES } from '../../js/accounting.js';
import { MIN_CHARS, OLD_CHARS } from './retention.mjs';

const int = (x) => (x === undefined || x === null || Number.isNaN(x) ? '–' : Math.round(x).toLocaleString('en-US'));
const f1 = (x) => (x === undefined || x === null || Number.isNaN(x) ? '–' : x.toFixed(1));
const f2 = (x) => (x === undefined || x === null || Number.isNaN(x) ? '–' : x.toFixed(2));
const M = (x) => (x / 1e6).toFixed(1);
const k = (x) => (x >= 10_000 ? `${int(x / 1000)}k` : int(x));
const pct = (a, b) => (b === 0 ? '–' : `${((100 * a) / b).toFixed(a === b ? 0 : 1)}%`);
const table = (head, rows) => [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
const median = (xs) => (xs.length === 0 ? null : [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]);

/** Over-window turns a peer may have and still count as holding the window (0.2% of turns). */
export const HOLD_OVER_WINDOW = 0.002;

/** Whether a system holds the window: at most 0.2% over-window turns, no invalid turn, the newest message always sent. */
export function holdsWindow(t) {
  return t.overWindow <= HOLD_OVER_WINDOW * t.turns && t.invalid === 0 && t.newestDropped === 0;
}

/** The price of a summarizer's output token against an input token (Anthropic's models: 5×; OpenAI's 6×). */
export const OUTPUT_PRICE = 5;
const OUTPUT_PRICES = { anthropic: 5, openai: 6 };

/** The cache-aware cost a system may have against the cheapest peer that holds the window (with the summarizer priced too). */
export const COST_TARGET = 0.9;

/**
 * Cache-aware cost (Anthropic) with the summarizer's calls at the same model's prices: the part
 * of each call's input that repeats the agent's previous request is read from the prompt cache
 * (0.1×), the rest of its input is billed at 1×, its output at {@link OUTPUT_PRICE}.
 */
export function withSummarizer(t, provider = 'anthropic') {
  const cached = t.summarizerCached ?? 0;
  return t[provider] + (t.summarizerInput - cached) + PRICES[provider].read * cached + OUTPUT_PRICES[provider] * t.summarizerOutput;
}

/** Later-use retention targets of the default preset: shares of the later-used identifiers. */
export const RETENTION_TARGETS = { oldInView: 0.75, inView: 0.92, reach: 0.995 };

/** `a` of `b` as a share, or null when `b` is 0 (a run without retention figures). */
const share = (a, b) => (b > 0 ? a / b : null);

/** In view / in view or one reload, all and old, as table cells "all / old". */
function retentionCells(t) {
  return [`${pct(t.idsInView ?? 0, t.ids ?? 0)} / ${pct(t.oldInView ?? 0, t.oldIds ?? 0)}`, `${pct(t.idsReach ?? 0, t.ids ?? 0)} / ${pct(t.oldReach ?? 0, t.oldIds ?? 0)}`];
}

/** The figures the targets compare: the default preset, the cheapest peer that holds the window, the raw agent, summarizationMiddleware. */
export function targets(results) {
  const by = (id) => results.systems.find((s) => s.id === id);
  const ours = by('default');
  const raw = by('raw');
  const holding = results.systems.filter((s) => s.peer && holdsWindow(s.totals));
  const cheapest = holding.reduce((a, b) => (a === null || b.totals.anthropic < a.totals.anthropic ? b : a), null);
  const summarizers = results.systems.filter((s) => s.id.startsWith('langchain-summarization'));
  const cpuPeer = summarizers.reduce((a, b) => (a === null || b.totals.cpuMs < a.totals.cpuMs ? b : a), null);
  return { ours, raw, cheapest, holding, cpuPeer };
}

function targetRows(r) {
  const { ours, raw, cheapest, cpuPeer } = targets(r);
  const fromCache = r.systems.find((s) => s.id === 'default-cache');
  if (!ours) return [];
  const t = ours.totals;
  const met = (ok) => (ok ? 'met' : '**not met**');
  const rows = [];
  rows.push([
    '0 over-window turns, 0 invalid, newest message always sent',
    `${int(t.overWindow)} over the window, ${int(t.invalid)} invalid, newest dropped on ${int(t.newestDropped)} (cut on ${int(t.newestAltered)})`,
    met(t.overWindow === 0 && t.invalid === 0 && t.newestDropped === 0),
  ]);
  rows.push([
    '100% of originals recoverable',
    `${pct(t.recoverable, t.originals)} (${int(t.recoverable)} of ${int(t.originals)})${t.recoverableInOne === undefined ? '' : `; ${pct(t.recoverableInOne, t.originals)} with one reload of a marker the request names, the markers inside not followed`}`,
    met(t.recoverable === t.originals),
  ]);
  if (t.ids > 0) {
    const inView = share(t.idsInView, t.ids);
    const oldInView = share(t.oldInView, t.oldIds);
    const reach = share(t.idsReach, t.ids);
    const oldReach = share(t.oldReach, t.oldIds);
    const R = RETENTION_TARGETS;
    rows.push([
      `later-used identifiers in view: old ≥ ${100 * R.oldInView}%, all ≥ ${100 * R.inView}%`,
      `old ${pct(t.oldInView, t.oldIds)}, all ${pct(t.idsInView, t.ids)} (of ${int(t.oldIds)} and ${int(t.ids)})`,
      met((oldInView ?? 1) >= R.oldInView && inView >= R.inView),
    ]);
    rows.push([
      `later-used identifiers in view or one reload away ≥ ${100 * R.reach}%, all and old`,
      `all ${pct(t.idsReach, t.ids)}, old ${pct(t.oldReach, t.oldIds)}${t.oldUnreached > 0 ? `; ${int(t.oldUnreached)} old ones beyond one reload` : ''}`,
      met(reach >= R.reach && (oldReach ?? 1) >= R.reach),
    ]);
  }
  if (cheapest) {
    const ratio = t.anthropic / cheapest.totals.anthropic;
    rows.push([
      `cache-aware cost (Anthropic) ≤ ${COST_TARGET}× the cheapest peer that holds the window`,
      `${f2(ratio)}× ${cheapest.label} (${M(t.anthropic)} vs ${M(cheapest.totals.anthropic)} M)${ratio > COST_TARGET ? `; gap ${M(t.anthropic - COST_TARGET * cheapest.totals.anthropic)} M` : ''}`,
      met(ratio <= COST_TARGET),
    ]);
    const total = withSummarizer(t) / withSummarizer(cheapest.totals);
    rows.push([
      `with the summarizer's calls at the same model's prices (input 1×, the part that repeats the agent's previous request 0.1×, output ${OUTPUT_PRICE}×), ≤ ${COST_TARGET}× that peer's`,
      `${f2(total)}× (${M(withSummarizer(t))} vs ${M(withSummarizer(cheapest.totals))} M; its summarizer reads ${k(cheapest.totals.summarizerInput)} tokens${cheapest.id === 'langchain-summarization-4k' ? ', at most 4,000 of each span' : ''}, ours ${k(t.summarizerInput)}, every span whole, ${k(t.summarizerCached ?? 0)} of them from the cache)${total > COST_TARGET ? `; gap ${M(withSummarizer(t) - COST_TARGET * withSummarizer(cheapest.totals))} M` : ''}${
        fromCache
          ? `; with \`summarizeFromCache\` ${f2(withSummarizer(fromCache.totals) / withSummarizer(cheapest.totals))}× (${M(withSummarizer(fromCache.totals))} M; its summarizer reads ${k(fromCache.totals.summarizerInput)} tokens, ${k(fromCache.totals.summarizerCached ?? 0)} of them from the cache)`
          : ''
      }`,
      met(total <= COST_TARGET),
    ]);
    const plain = t.plain / cheapest.totals.plain;
    rows.push([
      'plain cost ≤ that peer\'s',
      `${f2(plain)}× (${M(t.plain)} vs ${M(cheapest.totals.plain)} M)${plain > 1 ? `; gap ${M(t.plain - cheapest.totals.plain)} M` : ''}`,
      met(plain <= 1),
    ]);
  } else {
    rows.push([`cache-aware cost ≤ ${COST_TARGET}× the cheapest peer that holds the window`, 'no peer holds the window in this run', '–']);
  }
  if (raw) {
    const ratio = t.anthropic / raw.totals.anthropic;
    rows.push([
      'cache-aware cost (Anthropic) ≤ 0.35× the raw agent\'s',
      `${f2(ratio)}× (${M(t.anthropic)} vs ${M(raw.totals.anthropic)} M)${ratio > 0.35 ? `; gap ${M(t.anthropic - 0.35 * raw.totals.anthropic)} M` : ''}`,
      met(ratio <= 0.35),
    ]);
  }
  if (cpuPeer) {
    const ratio = t.cpuMs / cpuPeer.totals.cpuMs;
    const counting = cpuPeer.totals.counterCpuMs;
    rows.push([
      'management CPU ≤ summarizationMiddleware\'s',
      `${f2(ratio)}× ${cpuPeer.label} (${f2(t.cpuMs / 1000)} vs ${f2(cpuPeer.totals.cpuMs / 1000)} s, of which ${f2(counting / 1000)} s in the exact counter it is given; ${f2(t.cpuMs / (cpuPeer.totals.cpuMs - counting))}× without it)`,
      met(ratio <= 1),
    ]);
  }
  return rows;
}

function systemRows(r) {
  return r.systems.filter((s) => !s.curve).map((s) => {
    const t = s.totals;
    const holds = s.peer ? (holdsWindow(t) ? 'yes' : 'no') : '';
    return [
      s.label,
      int(t.overWindow),
      t.invalid === 0 ? '0' : `${int(t.invalid)}${t.empty > 0 ? ` (${int(t.empty)} empty)` : ''}`,
      t.newestDropped === 0 ? '0' : int(t.newestDropped),
      M(t.plain),
      `**${M(t.anthropic)}**`,
      M(t.openai),
      int(t.rewrites),
      t.summarizerCalls === 0 ? '–' : `${k(t.summarizerInput)} / ${k(t.summarizerOutput)} (${int(t.summarizerCalls)} calls)`,
      M(withSummarizer(t)),
      ...retentionCells(t),
      t.recoverableInOne === undefined ? pct(t.recoverable, t.originals) : `${pct(t.recoverable, t.originals)} / ${pct(t.recoverableInOne, t.originals)}`,
      t.counterCpuMs > 0 ? `${f2(t.cpuMs / 1000)} (${f2(t.counterCpuMs / 1000)} counting)` : f2(t.cpuMs / 1000),
      holds,
    ];
  });
}

/** Per trace, for one system: where its cost goes, beside the cheapest holding peer and the raw agent on the same trace. */
function traceRows(r, id) {
  const { cheapest, raw } = targets(r);
  const sys = r.systems.find((s) => s.id === id);
  if (!sys) return [];
  return sys.traces.map((t) => {
    const peer = cheapest?.traces.find((x) => x.trace === t.trace);
    const base = raw?.traces.find((x) => x.trace === t.trace);
    const sent = t.turnList.map((x) => x[2]);
    return [
      t.trace,
      int(t.turns),
      int(t.passes),
      t.medianFreed === null ? '–' : int(t.medianFreed),
      t.firstChanged === null ? '–' : `${int(t.firstChanged)} of ${int(median(sent))}`,
      int(t.rewrites),
      f2(t.anthropic / 1e6),
      peer ? f2(t.anthropic / peer.anthropic) : '–',
      base ? f2(t.anthropic / base.anthropic) : '–',
      t.overWindow === 0 ? '0' : int(t.overWindow),
      t.ids === undefined ? '–' : `${int(t.ids)} (${int(t.oldIds)})`,
      ...retentionCells(t),
    ];
  });
}

/** The traces where the default preset pays most over the cheapest holding peer, with why. */
function lossNotes(r) {
  const { ours, cheapest } = targets(r);
  if (!ours || !cheapest) return [];
  const rows = ours.traces
    .map((t) => ({ t, peer: cheapest.traces.find((x) => x.trace === t.trace) }))
    .filter((x) => x.peer)
    .map((x) => ({ ...x, excess: x.t.anthropic - x.peer.anthropic }))
    .sort((a, b) => b.excess - a.excess);
  const total = rows.reduce((s, x) => s + Math.max(0, x.excess), 0);
  return rows
    .filter((x) => x.excess > 0)
    .slice(0, 6)
    .map(({ t, peer, excess }) => {
      const rewritten = t.turnList.filter((x) => x[3] !== null);
      const resent = rewritten.reduce((s, x) => s + (x[0] - x[1]), 0);
      const types = new Map();
      for (const p of t.passList) for (const ty of p.types ?? []) types.set(ty, (types.get(ty) ?? 0) + 1);
      const top = [...types].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([k, n]) => `${k} ×${n}`).join(', ');
      return `\`${t.trace}\`: ${M(excess)} M more than ${cheapest.label} (${pct(excess, total)} of the whole excess). ${int(t.passes)} passes in ${int(t.turns)} turns (${peer.passes > 0 ? `the peer: ${int(peer.passes)}` : `the peer rewrote ${int(peer.rewrites)} times`}), median ${int(t.medianFreed)} tokens freed per pass, first changed message at median index ${int(t.firstChanged)}; the ${int(t.rewrites)} rewritten requests re-sent ${M(resent)} M tokens uncached. Passes using each step: ${top || '–'}.`;
    });
}

/** How later-use retention is measured (bench/cost/retention.mjs holds the one definition). */
const RETENTION_NOTE =
  `Later-use retention needs no model: it reads what the recorded agent did next. At every model turn, the identifiers the agent wrote in its next message (the trace's assistant message that answers the turn: its text, tool-call names and arguments) that appeared earlier in the conversation (a system message does not count) are what it needed from its context then. An identifier is a path (\`/testbed/astroid/nodes.py\`, \`src/main.rs\`, a URL; not \`and/or\`), a file or dotted module name (\`nodes.py\`, \`os.path.join\`), a snake_case, camelCase or PascalCase name, a number of 4 digits or more (alone or in groups, as \`2024-05-01\`), or a hex id with a digit and a letter (\`258c7280\`, a uuid), of ${MIN_CHARS} characters or more: plain words, short numbers and words of hex letters alone do not count. A path also yields its file name and the names in it. It is old when more than ${int(OLD_CHARS)} characters of conversation text (each message's text, the system prompt left out, joined by newlines) follow its last occurrence before the turn: where context managers differ. In view: the request the system sends contains it (as text; the request's text read the same way). In view or one reload: or the originals behind one offload marker (\`<!-- CONTEXT_OFFLOAD: uuid=... -->\`; for Strands' context manager, a stash reference \`[ref: ...]\` that its \`retrieve_context\` tool answers) that request names contain it, one hop (a marker inside what one reload gives back is not followed), the whole offload counting (the reload tool answers in pages, all of them one reload's reach); the other peers keep no store, so for them both figures are the same. The extraction is the benchmark's own (bench/cost/retention.mjs), independent of the engine's, so the measure cannot flatter the engine. The same identifiers count for every system.`;

/**
 * The old later-used identifiers a system leaves out of view, by the replacement whose one
 * reload reaches them (told by its text: a summary, a truncated tool result, an offload notice,
 * an emergency notice), and those no one reload reaches.
 */
function retentionNote(t) {
  const out = t.oldIds - t.oldInView;
  if (!(out > 0)) return null;
  const behind = [
    [t.oldBehindSummary, 'behind a summary'],
    [t.oldBehindTruncated, 'behind a truncated tool result'],
    [t.oldBehindNotice, 'behind an offload notice or preview'],
    [t.oldBehindEmergency, 'behind an emergency notice'],
  ]
    .filter(([n]) => n > 0)
    .map(([n, what]) => `${int(n)} ${what}`);
  return (
    `Retention: of the ${int(t.oldIds)} old later-used identifiers, ${int(out)} (${pct(out, t.oldIds)}) are not in view when the agent needs them. ` +
    `One reload of a marker in the request reaches ${int(out - t.oldUnreached)}: ${behind.join(', ') || 'none'}. ` +
    `${int(t.oldUnreached)} are beyond one reload${t.oldUnreached > 0 ? `, ${int(t.oldDeeper)} of them two or more reloads away (a replacement whose originals hold an earlier replacement's marker)` : ''}. ` +
    `Of all ${int(t.ids)} later-used identifiers, ${int(t.ids - t.idsInView)} are not in view and ${int(t.ids - t.idsReach)} beyond one reload.`
  );
}

/** Where the default preset's cache-aware cost goes, over every trace of the run. */
function whyNote(sys) {
  const rewritten = sys.traces.flatMap((t) => t.turnList.filter((x) => x[3] !== null));
  if (rewritten.length === 0) return null;
  const resent = rewritten.reduce((s, x) => s + (x[0] - x[1]), 0);
  const passes = sys.traces.flatMap((t) => t.passList);
  const after = median(passes.map((p) => p.tokensAfter).filter((x) => x !== undefined));
  const freed = median(passes.map((p) => p.freed).filter((x) => x !== undefined));
  const gaps = sys.traces.flatMap((t) => t.passList.slice(1).map((p, i) => p.turn - t.passList[i].turn));
  const types = new Map();
  for (const p of passes) for (const ty of p.types ?? []) types.set(ty, (types.get(ty) ?? 0) + 1);
  const top = [...types].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${int(n)}`).join(', ');
  return (
    `Why: ${M(1.25 * resent)} M of the ${M(sys.totals.anthropic)} M it costs (${pct(1.25 * resent, sys.totals.anthropic)}) is the uncached part of its ${int(rewritten.length)} rewritten requests, written to the cache again from their first changed message on. ` +
    `Its ${int(passes.length)} passes free a median of ${int(freed)} tokens and end at a median of ${int(after)} tokens, just under the trigger, so the next messages trigger another pass ${gaps.length > 0 ? `(median ${int(median(gaps))} turns between two passes of a trace)` : ''}. ` +
    `Passes using each step: ${top}.`
  );
}

/**
 * The markdown of the cost benchmark. `level` is the heading level of its title (1 when it
 * stands alone, 2 inside docs/benchmarks.md).
 */
export function costReport(r, { level = 2, perTrace = ['default'] } = {}) {
  const h = (n) => '#'.repeat(level + n);
  const out = [];
  const s = r.settings;
  const turns = r.systems[0]?.totals.turns ?? 0;
  out.push(`${h(0)} What a session costs and what it keeps: autocontext's presets against the peers`);
  out.push('');
  out.push(
    `${r.systems[0]?.totals.traces ?? 0} traces (${s.traceFilters.length === 0 ? 'every trace of the shared corpus and traces-extra' : `traces matching ${s.traceFilters.map((f) => `\`${f}\``).join(', ')}`}), ${int(turns)} model turns, replayed as an agent loop: messages are added in order and at every model turn (each assistant message of a trace) a system produces the request it would send, which is accounted; then the assistant message and what follows are added. Window ${int(s.window)} tokens, compress at ${int(s.trigger)} (each system's equivalent setting), the same offline summarizer for everyone ('[summary] ' + the first 400 characters of the span). Every request is counted with the same o200k_base counter (gpt-tokenizer, exact) and the same per-message accounting. Run ${r.machine.date}, ${f1(r.machine.seconds)} s, each system in a Node process of its own.`,
  );
  out.push('');
  const rows = targetRows(r);
  if (rows.length > 0) {
    out.push(`${h(1)} Targets for the default preset`);
    out.push('');
    out.push(table(['target', 'measured', ''], rows));
    out.push('');
    const { holding } = targets(r);
    out.push(`Peers that hold the window (at most 0.2% of turns over it, no invalid turn, the newest message always sent): ${holding.length === 0 ? 'none' : holding.map((x) => x.label).join(', ')}.`);
    out.push('');
  }
  out.push(`${h(1)} Every system`);
  out.push('');
  const reused = r.systems.filter((x) => x.reused);
  if (reused.length > 0) {
    out.push(`Taken from the run of ${reused[0].reused} (\`--reuse\`), not measured again: ${reused.map((x) => x.label).join(', ')}. Their CPU figures come from that run's machine and load.`);
    out.push('');
  }
  out.push(
    table(
      ['system', 'over-window turns', 'invalid turns', 'newest message dropped', 'cost (M tokens)', 'cache-aware, Anthropic (M)', 'cache-aware, OpenAI (M)', 'prompt rewrites', 'summarizer tokens in / out', 'cache-aware with the summarizer (M)', 'later-used identifiers in view, all / old', 'in view or one reload, all / old', 'originals recoverable / in one reload', 'management CPU (s)', 'holds the window'],
      systemRows(r),
    ),
  );
  out.push('');
  out.push(
    'Per model call, `prefix` is the tokens of the longest common prefix, message by message, with the previous request, `rest` the remaining tokens: cost = prefix + rest; cache-aware (Anthropic) = 0.1 × prefix + 1.25 × rest (cache read, cache write); cache-aware (OpenAI) = 0.1 × prefix + rest (its current models). Cache-aware with the summarizer adds each summarize call as the same Anthropic model would bill it: the leading messages of its input that repeat the agent\'s previous request (equal as canonical JSON, as the prefix is) at 0.1× (a cache read), the rest of its input at 1×, its output at ' + OUTPUT_PRICE + '× (the output price of Anthropic\'s models against their input price); a smaller model for summaries bills less. A prompt rewrite is a request that does not extend the previous one. Invalid: autocontext\'s `validate(request, \'openai\')` finds a problem, or the request holds nothing but system messages ("empty"). The newest message (the last one added before the call) counts as sent when it is the request\'s last message, whole or cut to its head (a long tool result truncated, maybe under a one-line header such as Strands\' `[Truncated: ...]`). Originals recoverable: the share of the trace\'s messages sent verbatim in the next request or reloadable from the system\'s own store through what that request names (autocontext\'s offload markers, followed into what they give back; Strands\' stash references; no other peer has one); in one reload: the same with one reload of each marker the request names, the markers inside what it gives back not followed. Management CPU: CPU time of the calls a host makes to the context manager (autocontext: `add`, `compressIfNeeded`, `messages`; a middleware\'s hook; a processor\'s `processLLMRequest`; `trimMessages`), summarizer and token counter included, the benchmark\'s own conversions and accounting excluded.',
  );
  out.push('');
  out.push(RETENTION_NOTE);
  out.push('');
  const { cheapest } = targets(r);
  for (const id of perTrace) {
    const sys = r.systems.find((x) => x.id === id);
    if (!sys) continue;
    out.push(`${h(1)} ${sys.label}, trace by trace`);
    out.push('');
    out.push(
      table(
        ['trace', 'turns', 'passes', 'median tokens freed per pass', 'median first changed index (of median request messages)', 'rewrites', 'cache-aware (M)', `× ${cheapest ? cheapest.label : 'cheapest peer'}`, '× raw agent', 'over-window', 'later-used identifiers (old)', 'in view, all / old', 'in view or one reload, all / old'],
        traceRows(r, id),
      ),
    );
    out.push('');
  }
  const ours = r.systems.find((x) => x.id === 'default');
  if (ours) {
    const why = whyNote(ours);
    if (why) {
      out.push(why);
      out.push('');
    }
    const kept = retentionNote(ours.totals);
    if (kept) {
      out.push(kept);
      out.push('');
    }
    const notes = lossNotes(r);
    if (notes.length > 0) {
      out.push('Where it loses most against the cheapest peer that holds the window:');
      out.push('');
      for (const n of notes) out.push(`- ${n}`);
      out.push('');
    }
    const mismatches = r.systems.filter((x) => x.family === 'autocontext').reduce((n, x) => n + x.totals.countMismatches, 0);
    out.push(`The engine's own \`tokenCount()\` and the benchmark's count of the same request differed on ${int(mismatches)} of ${int(r.systems.filter((x) => x.family === 'autocontext').reduce((n, x) => n + x.totals.turns, 0))} turns of autocontext's systems.`);
    out.push('');
  }
  out.push(`${h(1)} How each system is driven`);
  out.push('');
  for (const line of [
    "autocontext (the built package, `import 'autocontext'`): `add` each message, `compressIfNeeded()` then `messages()` before each call; `maxToken` the window, `tokenRatio: 0.75`, a `MemoryStore`, and `prices` those of the provider the run prices (Anthropic: read 0.1, write 1.25, output 5; OpenAI: read 0.1, write 1, output 6), as a host of that provider gets them by default. The facts preset extracts four concepts (error, test, file, user). Its summarizer is sent the summarize request's `system` and `prompt`; with `summarizeFromCache` a request that shares the agent's prompt cache is sent as its `messages` instead (the agent's own request, byte for byte, then the instruction), and the summary is the offline one of the same span.",
    "LangChain (`langchain` " + (r.versions.langchain ?? '?') + ', `@langchain/core` ' + (r.versions['@langchain/core'] ?? '?') + "): the middleware hooks are called as `createAgent` calls them, the trace's leading system messages being the agent's system prompt (outside the state). `summarizationMiddleware`'s `beforeModel` gets the state and its update is applied (so the state carries over); its token counter sees the state only, so its trigger is 24,000 minus the system prompt's tokens; its summarizer is a chat model answering with the offline summary of the span inside its prompt. `contextEditingMiddleware` + `ClearToolUsesEdit` (trigger 24,000 tokens, keep 3, placeholder `[cleared]`) edits the state's own list in `wrapModelCall`, counting with the `model` method (the benchmark's counter, system prompt included). `trimMessages` (strategy 'last', 24,000 tokens, `includeSystem`, `startOn: 'human'`) runs on the whole history before each call; when no human message is left to start on, it returns `[undefined]`, an empty request. Every LangChain counter is the exact o200k_base counter of gpt-tokenizer " + (r.versions['gpt-tokenizer'] ?? '') + " (the fastest exact JavaScript one) with the benchmark's per-message accounting, memoized per message; its CPU time is shown apart (\"counting\").",
    "Mastra (`@mastra/core` " + (r.versions['@mastra/core'] ?? '?') + "): each processor's `processLLMRequest` on the provider prompt before each call, from the whole history (their changes are transient). A run starts at each user message and the processors' state lives for one run, so `ToolCallFilter` with no options removes the tool calls of earlier runs only. `TokenLimiter(24000)` counts with its own estimate (tokenx), which reads fewer tokens than o200k_base on these traces, and drops whole tool exchanges, newest kept first, skipping one that does not fit (so it can drop the newest).",
    "Strands Agents (`@strands-agents/sdk` " +
      (r.versions['@strands-agents/sdk'] ?? '?') +
      "): an `Agent` runs its own loop on a model that answers from the trace and tools that return the trace's results; the trace's leading system messages are its `systemPrompt`, a user message that arrives while the agent works joins the tool results' message. The model reports the benchmark's count as its usage and its `countTokens` is the benchmark's counter (memoized per message), so every manager triggers at the same request size as the others; it refuses a request over the window with `ContextWindowOverflowError`, as a provider does, and the managers that act only then reduce the history and Strands retries (the retry is accounted, even when still over). `contextManager: 'auto'`: a tool result over 1,500 tokens becomes a 750-token head-and-tail preview naming its stash reference, a summary of the oldest messages at 85% of the window keeping the last 4, an emergency truncation; the 75% variant is the same with the summary at 75%. `SummarizingConversationManager` with its defaults (on overflow only: a summary of the oldest 30% of the messages, the last 10 kept) and `SlidingWindowConversationManager` with its (the last 40 messages kept after each invocation; on overflow, the oldest tool results truncated first, then the oldest messages dropped), each also with `proactiveCompression` at 75%. Management CPU: the agent's hooks (where every manager runs) and Strands' own count of the next request that feeds them.",
    'Observation masking (Lindenbauer et al. 2025, "The Complexity Trap"): the content of every tool result but the last 10 becomes a one-line placeholder. The raw agent sends every message.',
  ]) {
    out.push(`- ${line}`);
  }
  out.push('');
  return out.join('\n');
}

/** The targets of issue 33 at each window: against Strands 'auto' (summary at 75%) and the raw agent, the summarizer priced. */
export const WINDOW_TARGETS = {
  cost: { 32000: 0.95, 128000: 0.85, 200000: 0.85 },
  raw: { 128000: 0.6, 200000: 0.6 },
  oldInView: { 32000: 0.78, 128000: 0.9, 200000: 0.9 },
  overStrands: 5,
};

/**
 * The section on windows: for each window (a `{ window, anthropic, openai }` of `runCost`
 * results, the OpenAI run holding autocontext's systems told OpenAI's prices), the targets,
 * then every system's cost at both providers' prices with the summarizer, beside what it keeps
 * in view, and the chart (`chart` names its file).
 */
export function windowsReport(windows, { level = 2, chart = (w) => null } = {}) {
  const h = (n) => '#'.repeat(level + n);
  const out = [];
  out.push(`${h(0)} The bill at every window, both providers`);
  out.push('');
  out.push(
    "Every system over the same traces at 32k, 128k and 200k windows, compressing at 75% of each. Costs are cache-aware with the summarizer's calls priced as the same provider bills them (Anthropic: cache read 0.1×, write 1.25×, summarizer output 5×; OpenAI's current models: cached input 0.1×, the rest 1×, output 6×). autocontext's systems are told the prices of the provider the column prices (its `prices` option, each format's default for that provider), so each column is a run of its own; a peer knows no prices, one run serves both columns. Strands is `contextManager: 'auto'` with its summary at 75%, the closest peer at these windows.",
  );
  out.push('');
  for (const { window, anthropic, openai } of windows) {
    const by = (r, id) => r?.systems.find((s) => s.id === id);
    const strands = by(anthropic, 'strands-auto-75');
    const raw = by(anthropic, 'raw');
    const ours = by(anthropic, 'default');
    const oursOpenai = by(openai, 'default');
    out.push(`${h(1)} Window ${int(window)}`);
    out.push('');
    if (ours && strands) {
      const t = ours.totals;
      const T = WINDOW_TARGETS;
      const met = (ok) => (ok ? 'met' : '**not met**');
      const rows = [];
      const cost = withSummarizer(t) / withSummarizer(strands.totals);
      if (T.cost[window] !== undefined) rows.push([`cost with the summarizer (Anthropic) ≤ ${T.cost[window]}× Strands 'auto' at 75%`, `${f2(cost)}× (${M(withSummarizer(t))} vs ${M(withSummarizer(strands.totals))} M)`, met(cost <= T.cost[window])]);
      if (oursOpenai) {
        const o = withSummarizer(oursOpenai.totals, 'openai') / withSummarizer(strands.totals, 'openai');
        rows.push([`the same at OpenAI's prices`, `${f2(o)}× (${M(withSummarizer(oursOpenai.totals, 'openai'))} vs ${M(withSummarizer(strands.totals, 'openai'))} M)`, T.cost[window] === undefined ? '' : met(o <= T.cost[window])]);
      }
      if (raw && T.raw[window] !== undefined) {
        const x = withSummarizer(t) / withSummarizer(raw.totals);
        rows.push([`≤ ${T.raw[window]}× the raw agent`, `${f2(x)}× (${M(withSummarizer(raw.totals))} M raw, ${int(raw.totals.overWindow)} of its turns over the window)`, met(x <= T.raw[window])]);
      }
      const ours_ = t.oldInView / t.oldIds;
      const theirs = strands.totals.oldInView / strands.totals.oldIds;
      rows.push([
        `old later-used identifiers in view ≥ Strands' + ${T.overStrands} points and ≥ ${100 * T.oldInView[window]}%`,
        `${pct(t.oldInView, t.oldIds)} vs ${pct(strands.totals.oldInView, strands.totals.oldIds)}`,
        met(ours_ >= theirs + T.overStrands / 100 && ours_ >= T.oldInView[window]),
      ]);
      rows.push([`later-used identifiers in view or one reload ≥ 99.5%`, `${pct(t.idsReach, t.ids)} (Strands ${pct(strands.totals.idsReach, strands.totals.ids)})`, met(t.idsReach / t.ids >= 0.995)]);
      rows.push([
        '0 over the window, 0 invalid, 100% recoverable, the newest message always sent',
        `${int(t.overWindow)} over, ${int(t.invalid)} invalid, ${pct(t.recoverable, t.originals)} recoverable, newest dropped ${int(t.newestDropped)}`,
        met(t.overWindow === 0 && t.invalid === 0 && t.recoverable === t.originals && t.newestDropped === 0),
      ]);
      out.push(table(['target', 'measured', ''], rows));
      out.push('');
    }
    const rows = anthropic.systems
      .filter((s) => !s.curve)
      .map((s) => {
        const t = s.totals;
        const o = by(openai, s.id)?.totals ?? (s.family === 'autocontext' ? null : t);
        return [
          s.label,
          `**${M(withSummarizer(t))}**`,
          strands ? f2(withSummarizer(t) / withSummarizer(strands.totals)) : '–',
          raw ? f2(withSummarizer(t) / withSummarizer(raw.totals)) : '–',
          o ? M(withSummarizer(o, 'openai')) : '–',
          `${pct(t.idsInView ?? 0, t.ids ?? 0)} / ${pct(t.oldInView ?? 0, t.oldIds ?? 0)}`,
          `${pct(t.idsReach ?? 0, t.ids ?? 0)}`,
          `${pct(t.linesInView ?? 0, t.lines ?? 0)} / ${pct(t.oldLinesInView ?? 0, t.oldLines ?? 0)}`,
          int(t.overWindow),
          int(t.invalid),
          pct(t.recoverable, t.originals),
          int(t.rewrites),
        ];
      });
    out.push(
      table(
        ['system', 'Anthropic, with the summarizer (M)', "× Strands 'auto' 75%", '× raw', 'OpenAI, with the summarizer (M)', 'identifiers in view, all / old', 'in view or one reload', 'later-used lines in view, all / old', 'over-window turns', 'invalid', 'recoverable', 'rewrites'],
        rows,
      ),
    );
    out.push('');
    const file = chart(window);
    if (file) {
      out.push(`![cost against old later-used identifiers in view at ${int(window)} tokens](${file})`);
      out.push('');
    }
    const curve = anthropic.systems.filter((s) => s.curve || s.id === 'default');
    if (curve.length > 1) {
      const limit = (s) => (s.id === 'default' ? 2000 : Number(/(\d+)$/.exec(s.id)[1]));
      out.push(
        `The default's arrival limit (\`toolResultLimit\`): ${curve
          .sort((a, b) => limit(a) - limit(b))
          .map((s) => `${limit(s)} characters ${M(withSummarizer(s.totals))} M, ${pct(s.totals.oldInView, s.totals.oldIds)} of the old identifiers and ${pct(s.totals.linesInView, s.totals.lines)} of the lines in view`)
          .join('; ')}.`,
      );
      out.push('');
    }
  }
  out.push(
    'Later-used lines: at every model turn, the lines (trimmed, 24 characters or more) of the agent\'s next message, its text and its tool calls\' decoded arguments (the code an edit replaces, a command it repeats), that the conversation before it held verbatim; in view when the request holds the line. Identifiers say whether the agent can still name what it saw, lines whether it can still quote it.',
  );
  out.push('');
  return out.join('\n');
}
