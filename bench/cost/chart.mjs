// The cost benchmark's picture, one per window: each system a point, its cache-aware cost with
// the summarizer priced (x) against the old later-used identifiers it keeps in view (y), and
// the default's main knob (the arrival limit, `toolResultLimit`) as a curve through the default,
// so the frontier shows at a glance: down and to the left is cheaper and forgets more. Plain
// SVG, no dependency; the figures are those of docs/benchmarks.md's tables.
import { withSummarizer } from './report.mjs';

const W = 720;
const H = 440;
const PAD = { left: 64, right: 24, top: 40, bottom: 52 };

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const share = (t) => (t.oldIds > 0 ? (100 * t.oldInView) / t.oldIds : null);

/** Round tick values spanning [lo, hi]. */
function ticks(lo, hi, count = 5) {
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(Number(v.toFixed(6)));
  return out;
}

/** The limit of a curve system's id (`default-limit-3000`), 2000 for the default itself. */
const limitOf = (s) => (s.id === 'default' ? 2000 : Number(/^default-limit-(\d+)$/.exec(s.id)?.[1]));

/**
 * The SVG of one window's results (a `runCost` results object, Anthropic prices). Systems
 * without retention figures, or that do not hold the window, are drawn hollow.
 */
export function costChart(r) {
  const systems = r.systems.filter((s) => share(s.totals) !== null);
  const points = systems.map((s) => ({ s, x: withSummarizer(s.totals) / 1e6, y: share(s.totals) }));
  const xs = points.map((p) => p.x);
  const ys = points.map((p) => p.y);
  const [x0, x1] = [0, Math.max(...xs) * 1.08];
  const [y0, y1] = [Math.max(0, Math.floor(Math.min(...ys) / 10) * 10), 100];
  const px = (x) => PAD.left + ((x - x0) / (x1 - x0)) * (W - PAD.left - PAD.right);
  const py = (y) => H - PAD.bottom - ((y - y0) / (y1 - y0)) * (H - PAD.top - PAD.bottom);
  const out = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" font-family="system-ui, sans-serif" font-size="11">`);
  out.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  out.push(
    `<text x="${PAD.left}" y="22" font-size="14" font-weight="600">Window ${(r.settings.window / 1000).toFixed(0)}k: cost against what the agent keeps in view</text>`,
  );
  for (const t of ticks(x0, x1)) {
    out.push(`<line x1="${px(t)}" y1="${PAD.top}" x2="${px(t)}" y2="${H - PAD.bottom}" stroke="#eee"/>`);
    out.push(`<text x="${px(t)}" y="${H - PAD.bottom + 16}" text-anchor="middle" fill="#555">${t}</text>`);
  }
  for (const t of ticks(y0, y1)) {
    out.push(`<line x1="${PAD.left}" y1="${py(t)}" x2="${W - PAD.right}" y2="${py(t)}" stroke="#eee"/>`);
    out.push(`<text x="${PAD.left - 8}" y="${py(t) + 4}" text-anchor="end" fill="#555">${t}%</text>`);
  }
  out.push(
    `<text x="${(PAD.left + W - PAD.right) / 2}" y="${H - 14}" text-anchor="middle" fill="#333">cache-aware cost with the summarizer, Anthropic prices (M tokens, 30 traces)</text>`,
  );
  out.push(
    `<text transform="translate(16 ${(PAD.top + H - PAD.bottom) / 2}) rotate(-90)" text-anchor="middle" fill="#333">old later-used identifiers in view</text>`,
  );
  // The default's knob: its arrival limit, as a curve.
  const curve = points.filter((p) => p.s.family === 'autocontext' && Number.isFinite(limitOf(p.s))).sort((a, b) => limitOf(a.s) - limitOf(b.s));
  if (curve.length > 1) {
    out.push(`<polyline fill="none" stroke="#2b6cb0" stroke-width="1.5" stroke-dasharray="4 3" points="${curve.map((p) => `${px(p.x).toFixed(1)},${py(p.y).toFixed(1)}`).join(' ')}"/>`);
    for (const p of curve) {
      out.push(`<circle cx="${px(p.x).toFixed(1)}" cy="${py(p.y).toFixed(1)}" r="${p.s.id === 'default' ? 5 : 3}" fill="#2b6cb0"/>`);
      out.push(`<text x="${(px(p.x) + 6).toFixed(1)}" y="${(py(p.y) + 14).toFixed(1)}" fill="#2b6cb0">${limitOf(p.s)}${p.s.id === 'default' ? ' (default)' : ''}</text>`);
    }
  }
  for (const p of points) {
    if (p.s.curve || p.s.id === 'default') continue;
    const ours = p.s.family === 'autocontext';
    const color = ours ? '#2b6cb0' : p.s.family === 'baseline' ? '#777' : '#c05621';
    out.push(`<circle cx="${px(p.x).toFixed(1)}" cy="${py(p.y).toFixed(1)}" r="4" fill="${color}"/>`);
    out.push(`<text x="${(px(p.x) + 6).toFixed(1)}" y="${(py(p.y) - 6).toFixed(1)}" fill="${color}">${esc(p.s.id)}</text>`);
  }
  out.push(
    `<text x="${W - PAD.right}" y="${PAD.top - 8}" text-anchor="end" fill="#555">blue: autocontext (dashed: toolResultLimit from 1000 to 10000 characters) · orange: peers · grey: baselines</text>`,
  );
  out.push('</svg>');
  return out.join('\n') + '\n';
}
