/**
 * `autocontext compress <file|dir>`: replays conversations as an agent loop would and reports
 * what compression did, for one file (a detailed report) or every `*.json` file under a
 * directory (one row per file, totals, and a progress bar on the terminal).
 *
 * @module
 */

import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';

import { isAutoContextError } from '../errors.js';
import type { FsStore } from '../stores/fs.js';
import type { RunOptions } from './args.js';
import { sumBills, type Bill } from './bill.js';
import { InputError, UsageError, fsReason, oneLine } from './errors.js';
import type { FormatName } from './format.js';
import { conversationFiles, isDirectory } from './input.js';
import { summarizeEvents, type EventSummary } from './loop.js';
import { Progress } from './progress.js';
import { runFile, type Run } from './run.js';
import type { SummarizerStats } from './summarizers.js';
import { bytes, displayPath, facts, num, percent, round1, seconds, table, wrap, type Style } from './text.js';

/** The package's version (from its package.json). */
export type VersionFn = () => string;

/** The report of one conversation (`--json` prints it as is). */
export interface Report {
  autocontext: string;
  file: string;
  format: FormatName;
  formatFrom: 'option' | 'detected' | 'default';
  tokenizer: string;
  budget: { window: number; tokenRatio: number; target: number };
  preset?: string;
  before: { messages: number; tokens: number };
  after: { messages: number; tokens: number; underTarget: boolean };
  saved: { messages: number; tokens: number; percent: number };
  turns: { user: number; model: number; overWindow: number; overWindowWithout: number };
  largestRequest: { tokens: number; tokensWithout: number };
  /** What the model calls cost in input tokens with and without autocontext, plainly and cache-aware. */
  bill: Bill;
  passes: { checks: number; compressed: number };
  events: { count: number; tokensSaved: number; byType: EventSummary[] };
  summarizer: SummarizerStats & { failed: number; usage: 'counted' | 'reported' | 'partial' | 'none' };
  offloads: {
    count: number;
    messages: number;
    bytes: number;
    store: 'memory' | 'fs';
    directory: string | null;
    sessionId: string;
    keys: string[];
  };
  reason?: string;
  out?: string;
  timeMs: { total: number; compression: number };
}

/** The report of a run. */
export function buildReport(run: Run, o: RunOptions, version: string): Report {
  const { loop, store } = run;
  const { memory, plain, final } = loop;
  const working = memory.messages();
  const before = { messages: run.conversation.messages.length, tokens: plain.tokenCount() };
  const after = { messages: working.length, tokens: memory.tokenCount(), underTarget: final.underTarget };
  const events = memory.events();
  const offloads = memory.offloads();
  const keys = offloads.map((r) => `${memory.sessionId}/${r.uuid}`);
  const failed = events.filter((e) => e.type === 'SUMMARIZE_FAILED').length;
  const s = run.summarizer;
  const usage = s.calls === 0 || s.name === 'none' ? 'none' : s.name === 'offline' ? 'counted' : s.usageComplete ? 'reported' : 'partial';
  const report: Report = {
    autocontext: version,
    file: run.file,
    format: run.conversation.format,
    formatFrom: run.conversation.formatFrom,
    tokenizer: 'o200k_base',
    budget: { window: o.maxToken, tokenRatio: o.ratio, target: loop.target },
    before,
    after,
    saved: { messages: before.messages - after.messages, tokens: before.tokens - after.tokens, percent: percent(before.tokens - after.tokens, before.tokens) },
    turns: loop.turns,
    largestRequest: loop.largest,
    bill: loop.bill,
    passes: { checks: loop.calls.length, compressed: loop.calls.filter((c) => c.compressed).length },
    events: summarizeEvents(events.filter((e) => e.type !== 'SUMMARIZE_FAILED')),
    summarizer: { ...s, failed, usage },
    offloads: {
      count: offloads.length,
      messages: offloads.reduce((a, r) => a + r.messageCount, 0),
      bytes: keys.reduce((a, k) => a + (store.sizes.get(k) ?? 0), 0),
      store: o.store === undefined ? 'memory' : 'fs',
      directory: o.store === undefined ? null : (store.inner as FsStore).directory,
      sessionId: memory.sessionId,
      keys,
    },
    timeMs: { total: round1(run.timeMs), compression: round1(loop.compressionMs) },
  };
  if (o.preset !== undefined) report.preset = o.preset;
  if (!final.underTarget) report.reason = final.reason ?? 'over the target after every step';
  return report;
}

/** Writes the compressed working messages of a run to `path`, in the input's shape. */
async function writeOut(run: Run, path: string): Promise<void> {
  const working = run.loop.memory.messages();
  const { container } = run.conversation;
  const body = container === null ? working : { ...container, [run.conversation.key]: working };
  try {
    await writeFile(path, JSON.stringify(body, null, 2) + '\n');
  } catch (e) {
    throw new InputError(`cannot write ${path}: ${fsReason(e)}`);
  }
}

/** The summarizer line of a report. */
export function summarizerLine(r: Pick<Report, 'summarizer'>, s: Style): string {
  const z = r.summarizer;
  const who = z.name === 'openai' ? `openai ${z.model} at ${z.baseURL}` : z.name;
  if (z.name === 'none') return `${who}: the steps that need one were skipped`;
  if (z.calls === 0) return `${who}: not needed (no step asked for a summary)`;
  const parts = [`${num(z.calls)} call${z.calls === 1 ? '' : 's'}`];
  if (z.usage !== 'none' && (z.inputTokens > 0 || z.outputTokens > 0)) {
    parts.push(`read ${num(z.inputTokens)}`, `wrote ${num(z.outputTokens)} tokens${z.usage === 'counted' ? s.dim(' (counted)') : z.usage === 'partial' ? s.dim(' (as reported, some calls did not)') : ''}`);
  }
  const line = `${who}: ${parts.join(' · ')}`;
  return z.failed > 0 ? `${line} · ${s.bad(`${num(z.failed)} failed`)} ${s.dim('(fell back to offload)')}` : line;
}

/** How each provider's prices read in the bill's note. */
const PRICE_NOTES: Record<Bill['prices'], string> = {
  anthropic: "input tokens at Anthropic's prices, cache read 0.1×, cache write 1.25× (--prices openai)",
  openai: "input tokens at OpenAI's prices, cached input 0.1×, the rest 1× (--prices anthropic)",
};

/** The bill: input tokens with and without autocontext, plainly and as the provider bills them. */
export function billLines(b: Bill, s: Style): string[] {
  const pct = (p: number) => `${p < 0 ? '−' : ''}${Math.abs(p).toFixed(1)}%`;
  const rows = [
    [`bill of ${num(b.calls)} model call${b.calls === 1 ? '' : 's'}`, 'input tokens', 'cache-aware', ''],
    [
      'without autocontext',
      num(b.without.inputTokens),
      num(b.without.cacheAware),
      `${num(b.without.overWindow)} call${b.without.overWindow === 1 ? '' : 's'} over the window`,
    ],
    ['with autocontext', num(b.with.inputTokens), num(b.with.cacheAware), `${num(b.with.rewrites)} call${b.with.rewrites === 1 ? '' : 's'} rewrote the prompt`],
    ['saved', pct(b.saved.inputPercent), pct(b.saved.cacheAwarePercent), ''],
  ];
  const lines = table(rows, [false, true, true, false], (row, col, cell) =>
    row === 0 || col === 3
      ? s.dim(cell)
      : col === 0
        ? s.bold(cell)
        : row === 3
          ? (col === 1 ? b.saved.inputPercent : b.saved.cacheAwarePercent) >= 0
            ? s.good(cell)
            : s.bad(cell)
          : cell,
  );
  return [...lines.map((l) => `  ${l}`.trimEnd()), `  ${s.dim(`cache-aware: ${PRICE_NOTES[b.prices]}`)}`];
}

/** The report, for people. */
export function renderReport(r: Report, s: Style): string {
  const out: string[] = [`${s.bold('autocontext')} ${r.autocontext} · compress ${r.file}`, ''];
  const format = r.formatFrom === 'default' ? r.format : `${r.format}, ${r.formatFrom === 'option' ? 'as given' : 'detected'}`;
  facts(out, s, [
    ['conversation', `${num(r.before.messages)} messages · ${num(r.turns.user)} user turns · ${num(r.turns.model)} model turns ${s.dim(`(${format})`)}`],
    ['budget', `window ${num(r.budget.window)} · target ${num(r.budget.target)} (× ${r.budget.tokenRatio}) · ${r.tokenizer}${r.preset ? ` · preset ${r.preset}` : ''}`],
    ['summarizer', summarizerLine(r, s)],
  ]);
  out.push('');

  const sizes = [
    ['', 'messages', 'tokens', ''],
    ['before', num(r.before.messages), num(r.before.tokens), 'the whole conversation, sent as is'],
    ['after', num(r.after.messages), num(r.after.tokens), `what the next model call sends${r.after.underTarget ? ', under the target' : ''}`],
    ['saved', num(r.saved.messages), num(r.saved.tokens), `${r.saved.percent.toFixed(1)}% of the tokens`],
  ];
  out.push(
    ...table(sizes, [false, true, true, false], (row, col, cell) =>
      row === 0 || col === 3 ? s.dim(cell) : col === 0 ? s.bold(cell) : row === 3 ? s.good(cell) : cell,
    ).map((l) => `  ${l}`),
  );
  out.push('');
  out.push(...billLines(r.bill, s));
  out.push('');

  if (r.events.byType.length === 0) {
    facts(out, s, [['events', r.after.underTarget ? 'none: the conversation fits the budget' : 'none: what is over the target must be sent whole (see the note)']]);
  } else {
    const rows = [['events', 'count', 'messages', 'tokens saved']];
    for (const e of r.events.byType) rows.push([e.type, num(e.count), num(e.messages), num(e.tokensSaved)]);
    rows.push(['total', num(r.events.count), num(r.events.byType.reduce((a, e) => a + e.messages, 0)), num(r.events.tokensSaved)]);
    const last = rows.length - 1;
    out.push(
      ...table(rows, [false, true, true, true], (row, col, cell) =>
        row === 0 ? s.dim(cell) : row === last ? s.bold(cell) : col === 3 ? s.good(cell) : cell,
      ).map((l) => `  ${l}`),
    );
  }
  out.push('');

  const overText = `${num(r.turns.overWindow)} of ${num(r.turns.model)} model turns`;
  const where =
    r.offloads.store === 'memory'
      ? s.dim('in memory, gone at exit (--store DIR keeps them)')
      : `→ ${displayPath(join(r.offloads.directory!, r.offloads.sessionId))}/`;
  const more: [string, string][] = [
    ['over the window', `${r.turns.overWindow === 0 ? s.good(overText) : s.bad(overText)}   ${s.dim(`without autocontext: ${num(r.turns.overWindowWithout)}`)}`],
    ['largest request', `${num(r.largestRequest.tokens)} tokens   ${s.dim(`without autocontext: ${num(r.largestRequest.tokensWithout)}`)}`],
    ['compression passes', `${num(r.passes.compressed)} of ${num(r.passes.checks)} checks changed the working list`],
    ['offloads written', `${num(r.offloads.count)}, holding ${num(r.offloads.messages)} messages (${bytes(r.offloads.bytes)})`],
    ['', where],
    ['time', `${seconds(r.timeMs.total)} in all, ${seconds(r.timeMs.compression)} of it compressing`],
  ];
  if (r.out !== undefined) more.push(['compressed messages', `→ ${r.out}`]);
  facts(out, s, more);
  if (r.reason !== undefined) {
    out.push('');
    const [first, ...rest] = wrap(`note: ${r.reason}`, 76);
    out.push(`  ${s.bad('note')}${first!.slice(4)}`, ...rest.map((l) => `  ${l}`));
  }
  return out.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------
// A directory of conversations.

/** One row of a directory run: the report, or why the file failed. */
export type FileResult = Report | { file: string; error: string };

/** The report of a directory run (`--json` prints it as is). */
export interface DirectoryReport {
  autocontext: string;
  directory: string;
  budget: { window: number; tokenRatio: number };
  summarizer: { name: string; model?: string; calls: number; failed: number; inputTokens: number; outputTokens: number };
  files: FileResult[];
  totals: {
    files: number;
    failed: number;
    before: { messages: number; tokens: number };
    after: { messages: number; tokens: number };
    saved: { tokens: number; percent: number };
    events: number;
    turns: { model: number; overWindow: number; overWindowWithout: number };
    /** The bills of the conversations that succeeded, summed. */
    bill: Bill;
  };
  timeMs: number;
}

const isReport = (r: FileResult): r is Report => !('error' in r);

/** Why a file failed, in one line (what `main` would print for it alone). */
function failure(e: unknown): string {
  if (e instanceof InputError || e instanceof UsageError) return oneLine(e.message);
  if (isAutoContextError(e)) return `${e.code}: ${oneLine(e.message)}`;
  return `unexpected error: ${oneLine(e instanceof Error ? e.message : String(e))}`;
}

async function compressDirectory(dir: string, o: RunOptions & { out?: string }, version: string, stderr: NodeJS.WriteStream): Promise<DirectoryReport> {
  const started = performance.now();
  const files = await conversationFiles(dir);
  if (files.length === 0) throw new InputError(`${dir}: no *.json conversation files in it`);
  const progress = new Progress(stderr, files.length);
  const results: FileResult[] = [];
  try {
    for (const [i, file] of files.entries()) {
      const label = relative(dir, file);
      progress.update(i, 0, label, true);
      try {
        const run = await runFile(file, o, (done, total) => progress.update(i, done / total, label));
        const report = buildReport(run, o, version);
        if (o.out !== undefined) {
          const target = join(o.out, relative(dir, file));
          try {
            await mkdir(dirname(target), { recursive: true });
          } catch (e) {
            throw new InputError(`cannot write ${target}: ${fsReason(e)}`);
          }
          await writeOut(run, target);
          report.out = target;
        }
        results.push(report);
      } catch (e) {
        // Usage errors (a preset or format the engine refuses) are the same for every file.
        if (e instanceof UsageError) throw e;
        results.push({ file, error: failure(e) });
      }
    }
  } finally {
    progress.clear();
  }
  const ok = results.filter(isReport);
  const sum = (f: (r: Report) => number) => ok.reduce((a, r) => a + f(r), 0);
  const before = { messages: sum((r) => r.before.messages), tokens: sum((r) => r.before.tokens) };
  const after = { messages: sum((r) => r.after.messages), tokens: sum((r) => r.after.tokens) };
  const summarizer: DirectoryReport['summarizer'] = {
    name: o.summarizer.name,
    calls: sum((r) => r.summarizer.calls),
    failed: sum((r) => r.summarizer.failed),
    inputTokens: sum((r) => r.summarizer.inputTokens),
    outputTokens: sum((r) => r.summarizer.outputTokens),
  };
  if (o.summarizer.model !== undefined) summarizer.model = o.summarizer.model;
  return {
    autocontext: version,
    directory: dir,
    budget: { window: o.maxToken, tokenRatio: o.ratio },
    summarizer,
    files: results,
    totals: {
      files: results.length,
      failed: results.length - ok.length,
      before,
      after,
      saved: { tokens: before.tokens - after.tokens, percent: percent(before.tokens - after.tokens, before.tokens) },
      events: sum((r) => r.events.count),
      turns: { model: sum((r) => r.turns.model), overWindow: sum((r) => r.turns.overWindow), overWindowWithout: sum((r) => r.turns.overWindowWithout) },
      bill: sumBills(
        o.prices,
        ok.map((r) => r.bill),
      ),
    },
    timeMs: round1(performance.now() - started),
  };
}

/** The directory report, for people. */
export function renderDirectoryReport(r: DirectoryReport, s: Style): string {
  const out: string[] = [`${s.bold('autocontext')} ${r.autocontext} · compress ${r.directory} (${num(r.totals.files)} conversation${r.totals.files === 1 ? '' : 's'})`, ''];
  const z = r.summarizer;
  const usage = z.inputTokens > 0 || z.outputTokens > 0 ? ` · read ${num(z.inputTokens)} · wrote ${num(z.outputTokens)} tokens` : '';
  facts(out, s, [
    ['budget', `window ${num(r.budget.window)} · target ${num(Math.floor(r.budget.window * r.budget.tokenRatio))} (× ${r.budget.tokenRatio}) · o200k_base`],
    ['summarizer', `${z.name}${z.model ? ` ${z.model}` : ''}: ${num(z.calls)} calls${usage}${z.failed > 0 ? ` · ${s.bad(`${num(z.failed)} failed`)}` : ''}`],
  ]);
  out.push('');
  const rows = [['file', 'messages', 'tokens before', 'after', 'saved', 'events', 'over window']];
  const errors: [number, string][] = [];
  for (const f of r.files) {
    const name = displayPath(f.file);
    if (!isReport(f)) {
      errors.push([rows.length, f.error]);
      rows.push([name, '', '', '', '', '', 'failed']);
      continue;
    }
    rows.push([
      name,
      num(f.before.messages),
      num(f.before.tokens),
      num(f.after.tokens),
      `${f.saved.percent.toFixed(1)}%`,
      num(f.events.count),
      `${num(f.turns.overWindow)} (${num(f.turns.overWindowWithout)})`,
    ]);
  }
  const t = r.totals;
  rows.push(['total', num(t.before.messages), num(t.before.tokens), num(t.after.tokens), `${t.saved.percent.toFixed(1)}%`, num(t.events), `${num(t.turns.overWindow)} (${num(t.turns.overWindowWithout)})`]);
  const last = rows.length - 1;
  const failedRows = new Set(errors.map(([i]) => i));
  out.push(
    ...table(rows, [false, true, true, true, true, true, true], (row, col, cell) =>
      row === 0 ? s.dim(cell) : row === last ? s.bold(cell) : failedRows.has(row) && col === 6 ? s.bad(cell) : col === 4 ? s.good(cell) : cell,
    ).map((l) => `  ${l}`),
  );
  out.push(`  ${s.dim('over window: model turns over the window with autocontext (and without)')}`);
  if (errors.length > 0) {
    out.push('');
    for (const [i, message] of errors) out.push(`  ${s.bad('failed')} ${rows[i]![0]}: ${message}`);
  }
  out.push('', ...billLines(r.totals.bill, s));
  out.push('');
  facts(out, s, [['time', seconds(r.timeMs)]]);
  return out.join('\n') + '\n';
}

/** Runs `compress`; returns the text to print and whether every file succeeded. */
export async function compressCommand(
  o: RunOptions & { out?: string },
  version: string,
  s: Style,
  stderr: NodeJS.WriteStream,
): Promise<{ text: string; ok: boolean }> {
  if (await isDirectory(o.input)) {
    const report = await compressDirectory(o.input, o, version, stderr);
    return { text: o.json ? JSON.stringify(report, null, 2) + '\n' : renderDirectoryReport(report, s), ok: report.totals.failed === 0 };
  }
  const run = await runFile(o.input, o);
  const report = buildReport(run, o, version);
  if (o.out !== undefined) {
    await writeOut(run, o.out);
    report.out = o.out;
  }
  return { text: o.json ? JSON.stringify(report, null, 2) + '\n' : renderReport(report, s), ok: true };
}

