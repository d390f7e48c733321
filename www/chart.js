// The chart of tokens per model call: a grey bar for what an agent without autocontext would
// have sent, a coloured bar for what was sent, dashed lines at the window and the target, and
// a green mark over every call whose compression pass changed something (its title lists the
// events). Drawn as SVG from scratch on every update; a few hundred elements at most.

const NS = 'http://www.w3.org/2000/svg';
const W = 760;
const H = 250;
const PAD = { left: 46, right: 84, top: 18, bottom: 26 };

function el(name, attrs = {}, text) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Tokens in short form: 950, 1.5k, 32k. */
export function short(n) {
  if (n < 1000) return String(Math.round(n));
  if (n < 10_000) return `${(n / 1000).toFixed(1).replace(/\.0$/, '')}k`;
  return `${Math.round(n / 1000)}k`;
}

/** A round step for about `count` ticks up to `top`. */
function tickStep(top, count = 4) {
  const raw = top / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

/**
 * Draws into `svg`.
 *
 * @param {SVGSVGElement} svg
 * @param {{ points: { tokens: number, without: number, events: string[] }[], total: number, window: number, target: number }} data
 *   `total` is how many calls the whole replay has (the x axis is fixed from the start).
 */
export function drawChart(svg, { points, total, window, target }) {
  svg.replaceChildren();
  const maxWithout = Math.max(0, ...points.map((p) => p.without));
  const top = Math.max(window * 1.12, maxWithout * 1.04, 1);
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const y = (v) => PAD.top + plotH - (v / top) * plotH;
  const n = Math.max(total, points.length, 1);
  const slot = plotW / n;
  const barW = Math.max(1, Math.min(18, slot * 0.78));
  const x = (i) => PAD.left + i * slot + (slot - barW) / 2;

  // Grid and y ticks.
  const step = tickStep(top);
  for (let v = 0; v <= top; v += step) {
    svg.append(el('line', { class: 'grid-line', x1: PAD.left, x2: W - PAD.right, y1: y(v), y2: y(v) }));
    svg.append(el('text', { x: PAD.left - 6, y: y(v) + 4, 'text-anchor': 'end' }, short(v)));
  }
  // x ticks: call numbers.
  const every = n <= 20 ? 5 : n <= 60 ? 10 : n <= 150 ? 20 : 50;
  for (let c = every; c <= n; c += every) {
    svg.append(el('text', { x: PAD.left + (c - 0.5) * slot, y: H - 8, 'text-anchor': 'middle' }, String(c)));
  }
  svg.append(el('text', { x: PAD.left, y: H - 8, 'text-anchor': 'start' }, 'call 1'));

  // Bars.
  for (const [i, p] of points.entries()) {
    svg.append(el('rect', { class: 'bar-without', x: x(i), y: y(p.without), width: barW, height: Math.max(0, y(0) - y(p.without)), rx: 1.5 }));
    const bar = el('rect', { class: `bar-with${p.tokens > window ? ' over' : ''}`, x: x(i), y: y(p.tokens), width: barW, height: Math.max(0, y(0) - y(p.tokens)), rx: 1.5 });
    bar.append(el('title', {}, `call ${i + 1}: ${p.tokens.toLocaleString('en-US')} tokens sent (without autocontext: ${p.without.toLocaleString('en-US')})`));
    svg.append(bar);
  }

  // Window and target.
  svg.append(el('line', { class: 'target-line', x1: PAD.left, x2: W - PAD.right, y1: y(target), y2: y(target) }));
  svg.append(el('text', { class: 'target-label', x: W - PAD.right + 6, y: y(target) + 4 }, `target ${short(target)}`));
  svg.append(el('line', { class: 'window-line', x1: PAD.left, x2: W - PAD.right, y1: y(window), y2: y(window) }));
  svg.append(el('text', { class: 'window-label', x: W - PAD.right + 6, y: y(window) + 4 }, `window ${short(window)}`));

  // Compression marks, over the taller of the two bars.
  for (const [i, p] of points.entries()) {
    if (p.events.length === 0) continue;
    const cx = x(i) + barW / 2;
    const cy = Math.min(y(p.without), y(p.tokens)) - 5;
    const mark = el('path', { class: 'event-mark', d: `M${cx - 5},${cy - 7} L${cx + 5},${cy - 7} L${cx},${cy} Z`, 'data-call': i + 1 });
    mark.append(el('title', {}, `call ${i + 1}: ${p.events.join(', ')}`));
    svg.append(mark);
  }
  svg.append(el('line', { x1: PAD.left, x2: W - PAD.right, y1: y(0), y2: y(0), stroke: '#9ca3af' }));
}
