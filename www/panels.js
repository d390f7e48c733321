// The page's lists: the working list (what the model sees, with the engine's own messages
// highlighted), the offloads kept in IndexedDB, the compression events, and the dialog that
// shows the original messages of an offload.

/** What kind of engine-written message an event type makes, for highlighting. */
export function synthKind(eventType) {
  if (eventType === 'TOOL_RESULT_TRUNCATE') return 'truncated';
  if (/SUMMARY|COMPACT|COMPRESS|FACT/.test(eventType)) return 'summary';
  return 'offloaded';
}

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k.startsWith('data-')) node.setAttribute(k, String(v));
    else if (k === 'text') node.textContent = v;
    else node[k] = v;
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

/** The readable text of a message's content in any of the formats. */
export function contentText(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content == null ? '' : JSON.stringify(content);
  return content
    .map((p) => {
      if (typeof p === 'string') return p;
      if (p == null || typeof p !== 'object') return String(p);
      if (typeof p.text === 'string') return p.text;
      if (p.type === 'tool_result' || p.type === 'tool-result') return contentText(p.content ?? p.output?.value ?? p.output ?? '');
      if (p.type === 'tool_use' || p.type === 'tool-call' || p.functionCall) return '';
      if (p.functionResponse) return JSON.stringify(p.functionResponse.response ?? {});
      return `[${p.type ?? 'part'}]`;
    })
    .filter((t) => t !== '')
    .join('\n');
}

/** The readable text of a message in any of the formats: its content, a Gemini content's parts, a Responses item's output or reasoning summary. */
export function messageText(m) {
  return contentText(m.content ?? m.parts ?? m.output ?? (m.type === 'reasoning' ? m.summary : undefined));
}

/** Who a message is from, in any of the formats (a Responses item without a role by its type; a Gemini content without one is the user's). */
export function roleOf(m) {
  return typeof m.role === 'string' ? m.role : typeof m.type === 'string' ? m.type : 'user';
}

/** The tool calls of a message, as `name(arguments)` lines, in any of the formats. */
export function callLines(m) {
  const out = [];
  for (const c of Array.isArray(m.tool_calls) ? m.tool_calls : []) out.push(`→ ${c.function?.name}(${c.function?.arguments ?? ''})`);
  for (const p of Array.isArray(m.content) ? m.content : Array.isArray(m.parts) ? m.parts : []) {
    if (p?.type === 'tool_use') out.push(`→ ${p.name}(${JSON.stringify(p.input)})`);
    if (p?.type === 'tool-call') out.push(`→ ${p.toolName}(${JSON.stringify(p.input ?? p.args)})`);
    if (p?.functionCall) out.push(`→ ${p.functionCall.name}(${JSON.stringify(p.functionCall.args ?? {})})`);
  }
  if (m.type === 'function_call') out.push(`→ ${m.name}(${m.arguments ?? ''})`);
  return out;
}

const MARKER = /<!-- CONTEXT_OFFLOAD: uuid=([0-9a-f-]{36}) -->/;

/** A one-line preview of a message. */
function preview(m) {
  const text = messageText(m).replace(MARKER, '').trim();
  const calls = callLines(m);
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  // An engine summary opens with a bracketed header: show what follows it too.
  const first = /^\[[^\]]+\]$/.test(lines[0] ?? '') && lines.length > 1 ? `${lines[0]} ${lines[1]}` : (lines[0] ?? '');
  if (first !== '') return first.slice(0, 220);
  return calls.length > 0 ? calls.join('  ').slice(0, 220) : '(empty)';
}

/**
 * Renders the working list.
 *
 * @param {HTMLOListElement} list
 * @param {{ message: object, synthetic?: { kind: string, offload?: string } }[]} working  (from toJSON().working)
 * @param {(m: object) => number} tokensOf
 * @param {Set<string>} known - keys of rows shown before (new rows flash); updated in place
 * @param {(uuid: string) => void} onReload
 */
export function renderWorking(list, working, tokensOf, known, onReload) {
  const rows = [];
  const seen = new Set();
  for (const [i, { message: m, synthetic }] of working.entries()) {
    const key = `${roleOf(m)}:${messageText(m).length}:${preview(m)}`;
    seen.add(key);
    const kind = synthetic ? synthKind(synthetic.kind) : null;
    const uuid = synthetic?.offload ?? messageText(m).match(MARKER)?.[1] ?? null;
    rows.push(
      h(
        'li',
        { class: [kind ? `synthetic-${kind}` : '', known.has(key) ? '' : 'new'].join(' ').trim(), 'data-role': roleOf(m), 'data-kind': kind ?? 'original', title: synthetic ? synthetic.kind : '' },
        h('span', { class: 'idx', text: String(i + 1) }),
        h('span', {}, h('span', { class: `role ${roleOf(m)}`, text: roleOf(m) })),
        h('span', { class: 'tok', text: `${tokensOf(m).toLocaleString('en-US')} tok` }),
        h('span', { class: 'preview' }, kind ? h('i', { class: `tag ${kind}`, text: kind }) : null, kind ? ' ' : null, preview(m)),
        uuid ? h('button', { class: 'reload', type: 'button', text: 'original', 'data-uuid': uuid, onclick: () => onReload(uuid) }) : h('span'),
      ),
    );
  }
  known.clear();
  for (const k of seen) known.add(k);
  list.replaceChildren(...rows);
}

/**
 * Renders the offloads list.
 *
 * @param {HTMLUListElement} list
 * @param {{ uuid: string, messageCount: number, bytes?: number, type?: string }[]} offloads
 */
export function renderOffloads(list, offloads, onReload) {
  if (offloads.length === 0) {
    list.replaceChildren(h('li', { class: 'empty', text: 'none yet' }));
    return;
  }
  list.replaceChildren(
    ...offloads
      .slice()
      .reverse()
      .map((o) =>
        h(
          'li',
          { 'data-uuid': o.uuid },
          h('span', { class: 'uuid', text: `${o.uuid.slice(0, 13)}…`, title: o.uuid }),
          h('button', { class: 'reload', type: 'button', text: 'reload', 'data-uuid': o.uuid, onclick: () => onReload(o.uuid) }),
          h('span', {
            class: 'what',
            text:
              `${o.messageCount} message${o.messageCount === 1 ? '' : 's'}` +
              (o.names?.length ? ` · expands ${new Set(o.names).size} earlier offload${new Set(o.names).size === 1 ? '' : 's'}` : '') +
              `${o.bytes !== undefined ? ` · ${(o.bytes / 1024).toFixed(1)} KB` : ''}${o.type ? ` · ${o.type}` : ''}`,
          }),
        ),
      ),
  );
}

/**
 * Renders the events list (newest first).
 *
 * @param {HTMLOListElement} list
 * @param {{ call: number, event: object }[]} events
 */
export function renderEvents(list, events) {
  if (events.length === 0) {
    list.replaceChildren(h('li', { class: 'empty', text: 'none yet' }));
    return;
  }
  list.replaceChildren(
    ...events
      .slice()
      .reverse()
      .map(({ call, event: e }) =>
        h(
          'li',
          { class: e.type === 'SUMMARIZE_FAILED' ? 'failed' : '' },
          h('span', { class: 'at', text: `#${call}` }),
          h(
            'span',
            {},
            h('span', { class: 'type', text: e.type }),
            h('br'),
            e.type === 'SUMMARIZE_FAILED'
              ? h('span', { text: e.error ?? '' })
              : h('span', { class: 'delta', text: `${e.messageCount} msg · ${e.tokensBefore.toLocaleString('en-US')} → ${e.tokensAfter.toLocaleString('en-US')} tokens` }),
          ),
        ),
      ),
  );
}

/**
 * Says, under a list that scrolls, how many of its rows are out of view, and marks the list so
 * its edge shows it goes on; says nothing when every row is in view.
 *
 * @param {HTMLElement} list
 * @param {HTMLElement} hint
 * @param {string} what - what the rows are (`offloads`)
 */
export function scrollCue(list, hint, what) {
  const update = () => {
    const box = list.getBoundingClientRect();
    const rows = [...list.children];
    const hidden = rows.filter((r) => {
      const row = r.getBoundingClientRect();
      return row.bottom > box.bottom + 1 || row.top < box.top - 1;
    }).length;
    list.classList.toggle('scrolls', hidden > 0);
    list.classList.toggle('more-below', list.scrollTop + list.clientHeight < list.scrollHeight - 1);
    hint.hidden = hidden === 0;
    hint.textContent = hidden === 0 ? '' : `${rows.length - hidden} of ${rows.length} ${what} in view · scroll for the other ${hidden}`;
  };
  if (!list.dataset.cue) {
    list.dataset.cue = 'on';
    list.addEventListener('scroll', update, { passive: true });
  }
  update();
}

/**
 * Shows the original messages of an offload in the dialog.
 *
 * @param {HTMLDialogElement} dialog
 * @param {string} uuid
 * @param {object[]} messages
 * @param {string} where - where they were read from
 * @param {{ own?: number, names?: string[] }} [held] - how many messages the offload itself holds, and the earlier offloads its messages stand for
 */
export function showOriginal(dialog, uuid, messages, where, held = {}) {
  const { own, names = [] } = held;
  const n = (k, word) => `${k} ${word}${k === 1 ? '' : 's'}`;
  const earlier = [...new Set(names)];
  const why =
    names.length > 0 && own !== undefined
      ? `: the offload holds ${n(own, 'message')}; ${names.length} of them, written by earlier passes, stand${names.length === 1 ? 's' : ''} for ${n(earlier.length, 'earlier offload')} (${earlier.map((u) => `${u.slice(0, 8)}…`).join(', ')}), shown here as their originals`
      : '';
  dialog.querySelector('#original-title').textContent = `Original messages of offload ${uuid.slice(0, 8)}…`;
  dialog.querySelector('#original-meta').textContent = `${n(messages.length, 'message')}, byte-exact, reloaded from ${where} (uuid ${uuid})${why}`;
  dialog.querySelector('#original-body').replaceChildren(
    ...messages.map((m, i) =>
      h(
        'article',
        { class: 'original-message', 'data-role': roleOf(m) },
        h('header', {}, h('span', { class: `role ${roleOf(m)}`, text: roleOf(m) }), `message ${i + 1}`, m.tool_call_id ? ` · answers ${m.tool_call_id}` : ''),
        messageText(m) === '' ? null : h('pre', { class: 'original-text', text: messageText(m) }),
        ...callLines(m).map((c) => h('pre', { class: 'original-call', text: c })),
      ),
    ),
  );
  dialog.dataset.uuid = uuid;
  if (!dialog.open) dialog.showModal();
  dialog.querySelector('.original-body').scrollTop = 0;
}
