// The demo: a conversation replayed as an agent loop would run it. Each step adds the messages
// up to the next model call, runs autocontext's compression pass, and shows the request the
// model would get: a meter against the window, the chart of every call so far, the bill (input
// tokens with and without autocontext, plainly and cache-aware, priced as the command line
// prices them), the working list, the offloads (kept in IndexedDB) and the events. The summarizer is the built-in
// offline one unless the settings name an OpenAI-compatible endpoint.
//
// It reads and replays a conversation as `autocontext compress` does (the command line's own
// modules: the formats, the model calls, the bill), so the same input gives the same figures
// in both. Where two figures of the page count different things, the page says so: the
// replay sends the conversation's model calls and the next one, after its last message,
// which the bill leaves out (no answer to it was recorded); a reload shows an offload's
// messages with the earlier offloads it names expanded in place.

import { AutoContextMemory, countTokens, isAutoContextError, offlineSummarize } from 'autocontext';
import { IndexedDBStore } from 'autocontext/stores/indexeddb';
import { BillMeter, PRICES } from '/pkg/dist/cli/bill.js';
import { isUserTurn, modelCalls, readConversation } from '/pkg/dist/cli/format.js';
import { openaiSummarizer, SummarizerUnavailable } from '/pkg/dist/cli/openai.js';
import { drawChart } from './chart.js';
import { renderEvents, renderOffloads, renderWorking, scrollCue, showOriginal, messageText, callLines } from './panels.js';

const $ = (id) => document.getElementById(id);
const fmt = (n) => Math.round(n).toLocaleString('en-US');
/** Pause between steps for each speed setting, in milliseconds. */
const DELAYS = [1200, 600, 250, 80, 0];
const DATABASE = 'autocontext-demo';

const store = new IndexedDBStore({ databaseName: DATABASE });

const state = {
  conversation: null, // { name, messages, format }
  memory: null,
  plain: null,
  meter: null, // the bill of the model calls so far
  callAt: [], // index of the message each model call produces (the last: the conversation's length)
  step: 0, // model calls made
  cursor: 0, // messages added
  points: [],
  events: [], // { call, event }
  sizes: new Map(), // offload uuid -> { bytes in IndexedDB, uuids of the earlier offloads it names }
  known: new Set(),
  playing: false,
  busy: false,
  settings: null,
};

// ---------------------------------------------------------------------------------------------
// Status and the page's state attribute (the tests wait on it).

function setState(s) {
  document.body.dataset.state = s;
}

function status(text, error = false) {
  const el = $('status');
  el.textContent = text;
  el.classList.toggle('error', error);
}

function buttons() {
  const loaded = state.conversation !== null && state.memory !== null;
  const done = loaded && state.step >= state.callAt.length;
  $('play').disabled = !loaded || done;
  $('step').disabled = !loaded || done || state.playing;
  $('to-end').disabled = !loaded || done;
  $('reset').disabled = !loaded || state.busy;
  $('play').textContent = state.playing ? '❚❚ Pause' : '▶ Play';
}

// ---------------------------------------------------------------------------------------------
// Settings.

function readSettings() {
  const form = $('settings');
  const data = new FormData(form);
  const maxToken = Number(data.get('maxToken'));
  const ratio = Number(data.get('ratio'));
  const preset = String(data.get('preset') ?? '').trim();
  const summarizer = String(data.get('summarizer'));
  const concepts = String(data.get('concepts') ?? '')
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '');
  const prices = String(data.get('prices') ?? 'anthropic');
  const settings = { maxToken, ratio, preset: preset || undefined, concepts, summarizer, prices };
  if (summarizer === 'openai') {
    settings.baseURL = String(data.get('baseURL') ?? '').trim() || 'https://api.openai.com/v1';
    settings.model = String(data.get('model') ?? '').trim();
    settings.apiKey = String(data.get('apiKey') ?? '').trim();
  }
  return settings;
}

function summarizeFn(settings) {
  if (settings.summarizer !== 'openai') return offlineSummarize;
  if (!settings.model) throw new Error('the OpenAI-compatible summarizer needs a model name');
  const options = { baseURL: settings.baseURL, model: settings.model };
  if (settings.apiKey) options.apiKey = settings.apiKey;
  return openaiSummarizer(options);
}

/** Whether this build of the engine knows presets, and which (from its own error message). */
function probePresets() {
  try {
    new AutoContextMemory({ preset: '\u0000probe' });
    return { supported: true, names: [] };
  } catch (e) {
    if (!isAutoContextError(e) || e.field !== 'preset' || /not an option/.test(e.message)) return { supported: false, names: [] };
    const names = [...e.message.matchAll(/[`"']([a-z][\w-]*)[`"']/g)].map((m) => m[1]).filter((n) => n !== 'preset');
    return { supported: true, names: [...new Set(names)] };
  }
}

// ---------------------------------------------------------------------------------------------
// The conversation and the memory.

function tokensOfMessage(m) {
  const text = `${messageText(m)}\n${callLines(m).join('\n')}`;
  return countTokens(text);
}

async function forgetSession() {
  if (state.memory) {
    try {
      await store.clear(`${state.memory.sessionId}/`);
    } catch {
      // a store that failed to clear only costs space
    }
  }
}

/** A fresh replay of the loaded conversation with the current settings. */
async function restart() {
  stop();
  await forgetSession();
  const conversation = state.conversation;
  state.settings = readSettings();
  const s = state.settings;
  // The engine prices its edits as the bill does, as the command line's does.
  const prices = { cacheRead: PRICES[s.prices].read, cacheWrite: PRICES[s.prices].write };
  const options = { format: conversation.format, maxToken: s.maxToken, tokenRatio: s.ratio, store, prices };
  if (s.preset) options.preset = s.preset;
  if (s.concepts.length > 0) options.concepts = s.concepts.map((keyword) => ({ keyword }));
  try {
    options.summarize = summarizeFn(s);
    state.memory = new AutoContextMemory(options);
    state.plain = new AutoContextMemory({ format: conversation.format, maxToken: 1_000_000_000, msgThreshold: 10_000_000 });
    state.meter = new BillMeter(conversation.format, s.maxToken, s.prices);
  } catch (e) {
    state.memory = null;
    status(`Cannot start: ${e.message}`, true);
    setState('error');
    buttons();
    return;
  }
  // The conversation's model calls, then the next one, after its last message.
  state.callAt = [...modelCalls(conversation.messages, conversation.format), conversation.messages.length];
  state.step = 0;
  state.cursor = 0;
  state.points = [];
  state.events = [];
  state.sizes = new Map();
  state.known = new Set();
  const users = conversation.messages.filter((m) => isUserTurn(m, conversation.format)).length;
  const calls = state.callAt.length - 1;
  status(`${conversation.messages.length} messages, ${users} user turns, ${calls} model calls (${conversation.format}), and the next call after the last message: ${calls + 1} requests. Press Play.`);
  setState('ready');
  await render(null);
  buttons();
}

/** Loads a conversation from parsed JSON, in any format the command line reads. */
async function load(name, data) {
  const { messages, format } = readConversation(data);
  state.conversation = { name, messages, format };
  $('source-name').textContent = name;
  $('source-name').title = name;
  await restart();
}

async function loadSample() {
  const response = await fetch('sample.json');
  if (!response.ok) throw new Error(`the sample is missing (${response.status})`);
  const data = await response.json();
  const title = data?.meta?.title ?? 'bundled sample: a long coding-agent session';
  await load(title, data);
}

async function loadFile(file) {
  stop();
  try {
    const text = await file.text();
    let data;
    try {
      data = JSON.parse(text);
    } catch (e) {
      throw new Error(`${file.name} is not JSON: ${e.message}`);
    }
    await load(file.name, data);
  } catch (e) {
    status(`Cannot replay ${file.name}: ${e.message}`, true);
  }
}

// ---------------------------------------------------------------------------------------------
// One step: the messages up to the next model call, then the compression pass.

async function step() {
  if (state.busy || state.step >= state.callAt.length) return false;
  state.busy = true;
  const { memory, plain, conversation } = state;
  try {
    const end = state.callAt[state.step];
    for (; state.cursor < end; state.cursor++) {
      memory.add(conversation.messages[state.cursor]);
      plain.add(conversation.messages[state.cursor]);
    }
    const before = memory.tokenCount();
    const result = await memory.compressIfNeeded();
    const unavailable = result.errors?.map((e) => e.cause).find((c) => c instanceof SummarizerUnavailable);
    // A model call of the conversation (not the next one, after its last message) is billed.
    if (end < conversation.messages.length) state.meter.call(memory.messages(), conversation.messages.slice(0, end));
    state.step++;
    const events = result.events.map((e) => e.type);
    for (const event of result.events) state.events.push({ call: state.step, event });
    state.points.push({ tokens: memory.tokenCount(), without: plain.tokenCount(), events, before });
    await render(result);
    if (unavailable) {
      stop();
      status(`The summarizer cannot be used: ${unavailable.message}. Its steps fell back to offloads; change the settings or continue.`, true);
    }
    return true;
  } catch (e) {
    stop();
    status(`Stopped: ${isAutoContextError(e) ? `${e.code}: ` : ''}${e.message}`, true);
    setState('error');
    return false;
  } finally {
    state.busy = false;
    if (state.step >= state.callAt.length && document.body.dataset.state !== 'error') {
      state.playing = false;
      setState('done');
      const { calls, over, overWithout } = overWindow();
      const next = state.points[state.points.length - 1];
      if (!$('status').classList.contains('error')) {
        status(
          `Done: ${calls} model calls, ${over} over the window (without autocontext: ${overWithout}). The next call, after the last message, ` +
            `would send ${fmt(next.tokens)} tokens (without autocontext: ${fmt(next.without)}); the bill leaves it out: no answer to it was recorded. ` +
            'Reload any offload to see its original messages.',
        );
      }
    }
    buttons();
  }
}

let timer = null;

function stop() {
  state.playing = false;
  clearTimeout(timer);
  timer = null;
  if (document.body.dataset.state === 'playing') setState('paused');
  buttons();
}

function play(delay) {
  if (state.step >= state.callAt.length) return;
  state.playing = true;
  setState('playing');
  buttons();
  const tick = async () => {
    if (!state.playing) return;
    const ok = await step();
    if (!ok || !state.playing || state.step >= state.callAt.length) return;
    timer = setTimeout(tick, delay ?? DELAYS[Number($('speed').value)]);
  };
  tick();
}

// ---------------------------------------------------------------------------------------------
// Rendering.

/** The conversation's model calls made so far (not the next one), and how many were over the window with and without autocontext. */
function overWindow() {
  const calls = state.callAt.length - 1;
  const made = state.points.slice(0, calls);
  const window = state.settings.maxToken;
  return { calls, made: made.length, over: made.filter((p) => p.tokens > window).length, overWithout: made.filter((p) => p.without > window).length };
}

/** Where the replay is: the conversation's model calls, then the next one. */
function progressText() {
  const calls = state.callAt.length - 1;
  return state.step <= calls ? `model call ${state.step} of ${calls}` : `the ${calls} model call${calls === 1 ? '' : 's'} and the next one`;
}

async function render(result) {
  const s = state.settings;
  const memory = state.memory;
  const target = Math.floor(s.maxToken * s.ratio);
  const tokens = memory.tokenCount();
  const last = state.points[state.points.length - 1];

  // The meter: the request of the last model call.
  const meter = $('meter');
  const shown = last ? last.tokens : 0;
  meter.dataset.tokens = String(shown);
  meter.dataset.budget = String(s.maxToken);
  meter.dataset.target = String(target);
  meter.setAttribute('aria-valuemax', String(s.maxToken));
  meter.setAttribute('aria-valuenow', String(shown));
  const fill = $('meter-fill');
  fill.style.width = `${Math.min(100, (shown / s.maxToken) * 100)}%`;
  fill.classList.toggle('warn', shown >= target && shown <= s.maxToken);
  fill.classList.toggle('over', shown > s.maxToken);
  $('meter-target').style.left = `${(target / s.maxToken) * 100}%`;
  $('meter-text').textContent = last ? `${fmt(shown)} / ${fmt(s.maxToken)} tokens · ${Math.round((shown / s.maxToken) * 100)}%` : `– / ${fmt(s.maxToken)} tokens`;
  $('meter-without').textContent = last ? `without autocontext: ${fmt(last.without)} tokens${last.without > s.maxToken ? ` — ${(last.without / s.maxToken).toFixed(1)}× the window` : ''}` : 'without autocontext: –';
  $('meter-legend').textContent = `target ${fmt(target)} (× ${s.ratio})`;

  drawChart($('chart'), { points: state.points, total: state.callAt.length, window: s.maxToken, target });
  const calls = state.callAt.length - 1;
  $('chart-note').textContent = `${calls + 1} bars: the conversation's ${calls} model calls and the next one, after its last message.`;

  // Stats.
  const allEvents = memory.events();
  const saved = last ? last.without - last.tokens : 0;
  const windowed = overWindow();
  const offloads = memory.offloads();
  $('stats').replaceChildren(
    ...[
      [fmt(saved), 'tokens saved in the last request'],
      [`${windowed.over} / ${windowed.overWithout}`, `of ${windowed.made} model calls over the window, with / without`],
      [fmt(allEvents.filter((e) => e.type !== 'SUMMARIZE_FAILED').length), 'compression events'],
      [fmt(offloads.length), 'offloads in IndexedDB'],
    ].map(([v, label]) => {
      const div = document.createElement('div');
      div.className = 'stat';
      const b = document.createElement('b');
      b.textContent = v;
      const span = document.createElement('span');
      span.textContent = label;
      div.append(b, span);
      return div;
    }),
  );

  renderBill(state.meter.bill());

  // The working list, with the engine's marks.
  const working = memory.toJSON().working;
  $('working-count').textContent = `${working.length} messages · ${fmt(tokens)} tokens`;
  renderWorking($('working'), working, tokensOfMessage, state.known, reload);
  scrollCue($('working'), $('working-more'), 'messages');

  // Offloads, with their size in IndexedDB and the earlier offloads each names.
  const typeOf = new Map(allEvents.filter((e) => e.offloadUuid).map((e) => [e.offloadUuid, e.type]));
  for (const o of offloads) {
    if (!state.sizes.has(o.uuid)) state.sizes.set(o.uuid, await stored(o.uuid));
  }
  $('offloads-count').textContent = offloads.length === 0 ? '' : `(${offloads.length})`;
  renderOffloads($('offloads'), offloads.map((o) => ({ ...o, ...state.sizes.get(o.uuid), type: typeOf.get(o.uuid) })), reload);
  scrollCue($('offloads'), $('offloads-more'), 'offloads');
  $('events-count').textContent = state.events.length === 0 ? '' : `(${state.events.length})`;
  renderEvents($('events'), state.events);
  scrollCue($('events'), $('events-more'), 'events');

  // Progress.
  $('progress').textContent = progressText();
  if (result) {
    const what = result.compressed ? `compressed ${fmt(result.tokensBefore)} → ${fmt(result.tokensAfter)} tokens: ${[...new Set(result.events.map((e) => e.type))].join(', ')}` : 'no compression needed';
    status(`Call ${state.step}: ${what}.`);
  }
}

/** Whose prices the bill's note names. */
const PRICE_NOTES = {
  anthropic: "input tokens at Anthropic's prices: a request's unchanged start is a cache read at 0.1×, the rest a cache write at 1.25×",
  openai: "input tokens at OpenAI's prices: a request's unchanged start is cached input at 0.1×, the rest 1×",
};

/** The bill of the model calls so far: with and without autocontext, plainly and cache-aware. */
function renderBill(bill) {
  const pct = (p) => `${p < 0 ? '−' : ''}${Math.abs(p).toFixed(1)}%`;
  const row = (cells, cls) => {
    const tr = document.createElement('tr');
    if (cls) tr.className = cls;
    for (const [text, c] of cells) {
      const td = document.createElement('td');
      td.textContent = text;
      if (c) td.className = c;
      tr.append(td);
    }
    return tr;
  };
  const tone = (p) => (p >= 0 ? 'good' : 'bad');
  $('bill-calls').textContent = `bill of ${bill.calls} model call${bill.calls === 1 ? '' : 's'}`;
  $('bill-body').replaceChildren(
    row([['without autocontext'], [fmt(bill.without.inputTokens)], [fmt(bill.without.cacheAware)], [`${bill.without.overWindow} over the window`, 'note']]),
    row([['with autocontext'], [fmt(bill.with.inputTokens)], [fmt(bill.with.cacheAware)], [`${bill.with.rewrites} rewrote the prompt`, 'note']]),
    row([['saved'], [pct(bill.saved.inputPercent), tone(bill.saved.inputPercent)], [pct(bill.saved.cacheAwarePercent), tone(bill.saved.cacheAwarePercent)], ['']], 'saved'),
  );
  const table = $('bill');
  table.dataset.prices = bill.prices;
  table.dataset.with = String(bill.with.inputTokens);
  table.dataset.without = String(bill.without.inputTokens);
  table.dataset.withCacheAware = String(bill.with.cacheAware);
  table.dataset.withoutCacheAware = String(bill.without.cacheAware);
  $('bill-note').textContent = `cache-aware: ${PRICE_NOTES[bill.prices]}`;
  $('bill-calls-note').textContent =
    'one model call per answer the conversation recorded, as `autocontext compress` bills them; the next call, after the last message, is not billed: no answer to it was recorded';
}

/** What IndexedDB holds of an offload: its size, and the earlier offloads its messages stand for (a reload expands them). */
async function stored(uuid) {
  const value = await store.get(`${state.memory.sessionId}/${uuid}`);
  if (value === null) return { bytes: 0, names: [] };
  let names = [];
  try {
    names = (JSON.parse(value).expand ?? []).map((x) => x.uuid);
  } catch {
    // a payload this page cannot read still has a size
  }
  return { bytes: new TextEncoder().encode(value).length, names };
}

async function reload(uuid) {
  try {
    const messages = await state.memory.reload(uuid);
    const own = state.memory.offloads().find((o) => o.uuid === uuid)?.messageCount;
    const names = (state.sizes.get(uuid) ?? (await stored(uuid))).names;
    showOriginal($('original'), uuid, messages, `IndexedDB "${DATABASE}"`, { own, names });
  } catch (e) {
    status(`Cannot reload ${uuid}: ${e.message}`, true);
  }
}

// ---------------------------------------------------------------------------------------------
// Wiring.

function wire() {
  $('play').addEventListener('click', () => (state.playing ? stop() : play()));
  $('step').addEventListener('click', () => step());
  $('to-end').addEventListener('click', () => {
    stop();
    play(0);
  });
  $('reset').addEventListener('click', () => restart());
  $('sample-button').addEventListener('click', () => loadSample().catch((e) => status(e.message, true)));
  $('file-input').addEventListener('change', (e) => {
    const file = e.target.files?.[0];
    if (file) loadFile(file);
    e.target.value = '';
  });
  $('settings').addEventListener('submit', (e) => {
    e.preventDefault();
    if (state.conversation) restart();
  });
  for (const radio of document.querySelectorAll('input[name=summarizer]')) {
    radio.addEventListener('change', () => {
      $('openai-fields').hidden = readSettings().summarizer !== 'openai';
    });
  }
  // Drag and drop anywhere on the page.
  let depth = 0;
  addEventListener('dragenter', (e) => {
    e.preventDefault();
    depth++;
    $('drop').hidden = false;
  });
  addEventListener('dragleave', () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) $('drop').hidden = true;
  });
  addEventListener('dragover', (e) => e.preventDefault());
  addEventListener('drop', (e) => {
    e.preventDefault();
    depth = 0;
    $('drop').hidden = true;
    const file = e.dataTransfer?.files?.[0];
    if (file) loadFile(file);
  });
}

async function main() {
  wire();
  const presets = probePresets();
  if (!presets.supported) {
    $('preset').disabled = true;
    $('preset').placeholder = 'this build has one ladder';
    $('concepts-field').hidden = true;
  } else {
    $('presets').replaceChildren(...presets.names.map((n) => Object.assign(document.createElement('option'), { value: n })));
  }
  // Offloads of earlier visits are of no use to this page: start clean.
  try {
    const sessions = new Set((await store.keys()).map((k) => k.split('/')[0]));
    for (const s of sessions) await store.clear(`${s}/`);
  } catch (e) {
    status(`IndexedDB is not available: ${e.message}`, true);
  }
  await loadSample();
}

window.demo = { state, step, play, stop, restart, reload, store };
main().catch((e) => {
  status(`The demo could not start: ${e.message}`, true);
  setState('error');
});
