/**
 * `autocontext replay <file>`: feeds a conversation turn by turn as an agent loop would and
 * draws the token curve of its model calls, marking each compression, then lists what each
 * compression did.
 *
 * @module
 */

import type { RunOptions } from './args.js';
import { tokenChart } from './chart.js';
import { billLines, summarizerLine, type Report, buildReport } from './compress.js';
import { isDirectory } from './input.js';
import { UsageError } from './errors.js';
import { runFile } from './run.js';
import { facts, num, type Style } from './text.js';

/** One model call in the replay report. */
export interface ReplayCall {
  /** 1-based number of the model call. */
  call: number;
  /** Index of the message the call produced (the conversation's length for the next call). */
  message: number;
  tokensBeforePass: number;
  tokens: number;
  tokensWithout: number;
  compressed: boolean;
  /** The pass's event types, in order. */
  events: string[];
}

/** The replay report (`--json` prints it as is). */
export interface ReplayReport {
  autocontext: string;
  file: string;
  format: Report['format'];
  budget: Report['budget'];
  turns: Report['turns'];
  summarizer: Report['summarizer'];
  before: Report['before'];
  after: Report['after'];
  bill: Report['bill'];
  calls: ReplayCall[];
}

/** At most this many compressions are listed in the text report. */
const LISTED = 24;

/** Event types with a count when repeated: `A, B ×2`. */
function eventList(types: string[]): string {
  const counts = new Map<string, number>();
  for (const t of types) counts.set(t, (counts.get(t) ?? 0) + 1);
  return [...counts].map(([t, n]) => (n > 1 ? `${t} ×${n}` : t)).join(', ');
}

/** The replay report, for people. */
export function renderReplay(r: ReplayReport, s: Style, width: number): string {
  const out: string[] = [`${s.bold('autocontext')} ${r.autocontext} · replay ${r.file}`, ''];
  facts(out, s, [
    ['conversation', `${num(r.before.messages)} messages · ${num(r.turns.user)} user turns · ${num(r.turns.model)} model turns ${s.dim(`(${r.format})`)}`],
    ['budget', `window ${num(r.budget.window)} · target ${num(r.budget.target)} (× ${r.budget.tokenRatio})`],
    ['summarizer', summarizerLine(r, s)],
  ]);
  out.push('');
  out.push(`  ${s.bold(`tokens sent per model call (${num(r.calls.length)}: the conversation's ${num(r.turns.model)} and the next)`)}`);
  out.push(`     ${s.accent('█')} ${s.dim('with autocontext')}   ${s.dim('░ without')}   ${s.good('▲')} ${s.dim('a compression pass')}`);
  out.push('');
  const chart = tokenChart(r.calls, r.budget.window, s, Math.max(20, Math.min(120, width - 8)));
  out.push(...chart.map((l) => `  ${l}`));
  out.push('');
  const compressed = r.calls.filter((c) => c.compressed);
  if (compressed.length === 0) {
    facts(out, s, [['compressions', 'none: every call fit the budget']]);
  } else {
    out.push(`  ${s.bold('compressions')}`);
    const wCall = String(r.calls.length).length;
    const wMsg = String(r.before.messages).length;
    const wTok = num(Math.max(...compressed.map((c) => c.tokensBeforePass))).length;
    for (const c of compressed.slice(0, LISTED)) {
      const from = num(c.tokensBeforePass).padStart(wTok);
      const to = num(c.tokens).padStart(wTok);
      out.push(`    ${s.good('▲')} call ${String(c.call).padStart(wCall)} ${s.dim(`(message ${String(c.message).padStart(wMsg)})`)}   ${from} → ${to} tokens   ${s.dim(eventList(c.events))}`);
    }
    if (compressed.length > LISTED) out.push(`    ${s.dim(`… and ${compressed.length - LISTED} more (--json lists them all)`)}`);
  }
  out.push('');
  const overText = `${num(r.turns.overWindow)} of ${num(r.turns.model)} model turns`;
  facts(out, s, [
    ['over the window', `${r.turns.overWindow === 0 ? s.good(overText) : s.bad(overText)}   ${s.dim(`without autocontext: ${num(r.turns.overWindowWithout)}`)}`],
    ['next call sends', `${num(r.after.tokens)} tokens   ${s.dim(`without autocontext: ${num(r.before.tokens)}`)}`],
  ]);
  out.push('', ...billLines(r.bill, s));
  return out.join('\n') + '\n';
}

/** Runs `replay`; returns the text to print. */
export async function replayCommand(o: RunOptions, version: string, s: Style, width: number): Promise<string> {
  if (await isDirectory(o.input)) throw new UsageError('replay: one conversation file, not a directory (compress takes directories)');
  const run = await runFile(o.input, o);
  const base = buildReport(run, o, version);
  const report: ReplayReport = {
    autocontext: version,
    file: o.input,
    format: base.format,
    budget: base.budget,
    turns: base.turns,
    summarizer: base.summarizer,
    before: base.before,
    after: base.after,
    bill: base.bill,
    calls: run.loop.calls.map((c, i) => ({
      call: i + 1,
      message: c.message,
      tokensBeforePass: c.tokensBeforePass,
      tokens: c.tokens,
      tokensWithout: c.tokensWithout,
      compressed: c.compressed,
      events: c.events.map((e) => e.type),
    })),
  };
  return o.json ? JSON.stringify(report, null, 2) + '\n' : renderReplay(report, s, width);
}
