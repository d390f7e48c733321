/**
 * A token curve drawn in text: one column per model call (or per group of calls when there are
 * more than fit), solid for the tokens sent, shaded above it for what an agent without
 * autocontext would have sent, a dotted line at the window, and a mark under every call whose
 * compression pass changed something.
 *
 * @module
 */

import type { Style } from './text.js';

/** One column's worth of data. */
export interface ChartPoint {
  tokens: number;
  tokensWithout: number;
  compressed: boolean;
}

const BLOCKS = ' ▁▂▃▄▅▆▇█';

/** Tokens in short form: `950`, `1.5k`, `32k`, `1.2M`. */
export function short(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 10_000) return `${(n / 1000).toFixed(1).replace(/\.0$/, '')}k`;
  if (n < 1_000_000) return `${Math.round(n / 1000)}k`;
  return `${(n / 1_000_000).toFixed(1).replace(/\.0$/, '')}M`;
}

/** Groups points into at most `width` columns: the largest values and any compression of each group. */
export function columns(points: readonly ChartPoint[], width: number): { points: ChartPoint[]; per: number } {
  const per = Math.max(1, Math.ceil(points.length / Math.max(1, width)));
  const out: ChartPoint[] = [];
  for (let i = 0; i < points.length; i += per) {
    const group = points.slice(i, i + per);
    out.push({
      tokens: Math.max(...group.map((p) => p.tokens)),
      tokensWithout: Math.max(...group.map((p) => p.tokensWithout)),
      compressed: group.some((p) => p.compressed),
    });
  }
  return { points: out, per };
}

/**
 * The chart's lines (without indentation). `height` rows of bars, the axis, the compression
 * marks and the call numbers.
 */
export function tokenChart(points: readonly ChartPoint[], window: number, s: Style, width = 64, height = 10): string[] {
  const { points: cols, per } = columns(points, width);
  const maxSent = Math.max(0, ...cols.map((p) => p.tokens));
  const maxWithout = Math.max(0, ...cols.map((p) => p.tokensWithout));
  const top = Math.max(window * 1.15, maxSent, Math.min(maxWithout, window * 2));
  const unit = top / height;
  const windowRow = Math.min(height - 1, Math.floor(window / unit));
  const labels = new Map<number, string>([
    [height - 1, short(top)],
    [windowRow, short(window)],
  ]);
  const labelWidth = Math.max(...[...labels.values()].map((l) => l.length), 1);
  const lines: string[] = [];
  for (let row = height - 1; row >= 0; row--) {
    let line = '';
    for (const p of cols) {
      const eighths = Math.round((p.tokens / unit) * 8);
      const fill = Math.max(0, Math.min(8, eighths - row * 8));
      const solidTop = Math.ceil(eighths / 8);
      const shadeTop = Math.min(height, Math.round(p.tokensWithout / unit));
      if (fill > 0) line += p.tokens > window ? s.bad(BLOCKS[fill]!) : s.accent(BLOCKS[fill]!);
      else if (row >= solidTop && row < shadeTop) line += s.dim('░');
      else if (row === windowRow) line += s.dim('┄');
      else line += ' ';
    }
    const label = labels.get(row) ?? '';
    const axis = row === windowRow ? '┼' : labels.has(row) ? '┤' : '│';
    lines.push(`${label.padStart(labelWidth)} ${axis}${line}${row === windowRow ? s.dim('  window') : ''}`);
  }
  const pad = ' '.repeat(labelWidth);
  lines.push(`${'0'.padStart(labelWidth)} └${'─'.repeat(cols.length)}`);
  lines.push(`${pad}  ${cols.map((p) => (p.compressed ? s.good('▲') : ' ')).join('').trimEnd()}`);
  // Call numbers every 10 columns.
  let numbers = '';
  for (let c = 0; c < cols.length; c += 10) {
    const label = String(c * per + 1);
    numbers = numbers.padEnd(c) + label;
  }
  lines.push(`${pad}  ${s.dim(numbers)}`);
  return lines;
}
