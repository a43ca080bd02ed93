// The operator console: plain DOM, no framework, no build step. Every string that came from a
// webhook is put into the page as text (textContent / text nodes), never as HTML.

import { startConnections } from './connections.js';
import { $, append, el, short, time } from './dom.js';

const TOKEN_KEY = 'agent-intake.apiToken';
const MAX_FEED = 300;
const MAX_OUTPUTS = 100;
/** Outputs whose delivery state is fetched from /v1/events/:id (the rest follow the activity feed). */
const DELIVERY_LOOKUPS = 30;
const STATS_EVERY_MS = 3000;
const BUCKET_MS = 10_000;
const BUCKETS = 30;

/** A sender worth showing: named, or not just the session key again (generic messages without a sender). */
const senderOf = (item) => {
  const sender = item.sender;
  if (!sender || (!sender.name && sender.id === item.sessionKey)) return null;
  return el('span', { class: 'sender' }, sender.name ? `${sender.name} (${sender.id})` : sender.id);
};

// ---------------------------------------------------------------------------------------------
// Access: the bearer token, asked once, kept in sessionStorage, never in a URL, never logged.

let token = sessionStorage.getItem(TOKEN_KEY) ?? '';
let tokenWaiters = [];

function headers() {
  return token ? { Authorization: `Bearer ${token}` } : {};
}

/** Show the token form; resolves once a token was entered. */
function needToken(refused) {
  if (refused && token) {
    token = '';
    sessionStorage.removeItem(TOKEN_KEY);
    $('token-error').hidden = false;
  }
  $('forget-token').hidden = true;
  $('token-panel').hidden = false;
  $('token-input').focus();
  return new Promise((resolve) => tokenWaiters.push(resolve));
}

$('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  token = $('token-input').value.trim();
  if (!token) return;
  sessionStorage.setItem(TOKEN_KEY, token);
  $('token-input').value = '';
  $('token-error').hidden = true;
  $('token-panel').hidden = true;
  $('forget-token').hidden = false;
  const waiters = tokenWaiters;
  tokenWaiters = [];
  for (const resolve of waiters) resolve();
});

$('forget-token').addEventListener('click', () => {
  token = '';
  sessionStorage.removeItem(TOKEN_KEY);
  location.reload();
});

/** A /v1 call with the token; a 401 brings the prompt back and tries again once a token is given. */
async function api(path, init = {}) {
  for (;;) {
    const response = await fetch(path, { ...init, headers: { ...headers(), ...(init.headers ?? {}) }, cache: 'no-store' });
    if (response.status !== 401) {
      if (token) $('forget-token').hidden = false;
      return response;
    }
    await needToken(true);
  }
}

async function apiJson(path, init) {
  const response = await api(path, init);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body?.error?.message ?? `${path} answered ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return body;
}

// ---------------------------------------------------------------------------------------------
// Server-Sent Events over fetch (EventSource cannot send an Authorization header).

/**
 * Read an SSE endpoint from `after=0`, calling `onFrame(event, data)` per frame, and reconnect
 * with `after=<last id>` when the connection ends.
 */
async function follow(path, indicator, onFrame) {
  let last = 0;
  let retryMs = 2000;
  for (;;) {
    let response;
    try {
      response = await api(`${path}?after=${last}`, { headers: { Accept: 'text/event-stream' } });
    } catch {
      response = undefined;
    }
    if (response?.status === 409) last = 0; // resume point ahead of the store: it was reset
    if (response?.ok && response.body) {
      indicator.dataset.state = 'on';
      try {
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let end;
          while ((end = buffer.search(/\r?\n\r?\n/)) !== -1) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + (buffer[end] === '\r' ? 4 : 2));
            const frame = parseFrame(block);
            if (frame.retry) retryMs = frame.retry;
            if (frame.id !== undefined && /^\d+$/.test(frame.id)) last = Number(frame.id);
            if (frame.data !== undefined) {
              try {
                onFrame(frame.event, JSON.parse(frame.data));
              } catch (error) {
                console.warn('console: frame not handled', error);
              }
            }
          }
        }
      } catch {
        // connection dropped: reconnect below
      }
    }
    indicator.dataset.state = 'off';
    await new Promise((resolve) => setTimeout(resolve, retryMs));
  }
}

function parseFrame(block) {
  const frame = { event: 'message' };
  const data = [];
  for (const line of block.split(/\r?\n/)) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') frame.event = value;
    else if (field === 'id') frame.id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) frame.retry = Number(value);
  }
  if (data.length > 0) frame.data = data.join('\n');
  return frame;
}

// ---------------------------------------------------------------------------------------------
// State, rendered on the next animation frame after it changes.

const feed = []; // verdict entries, oldest first
const outputs = []; // outputs, oldest first
const mergedInto = new Map(); // event id -> { output, parts }
const deliveries = new Map(); // output id -> { state, attempts, lastError }
const feedEls = new Map();
const outputEls = new Map();
const mediaUrls = new Map(); // media path -> Promise<blob: URL>
let sessionFilter = '';
let dirty = false;

function changed() {
  if (dirty) return;
  dirty = true;
  requestAnimationFrame(render);
}

function render() {
  dirty = false;
  const visible = (item) => !sessionFilter || item.sessionKey === sessionFilter;
  const feedRows = feed.filter(visible).reverse().map(feedRow);
  $('feed').replaceChildren(...(feedRows.length ? feedRows : [el('li', { class: 'empty' }, sessionFilter ? 'No deliveries of this session in this page.' : 'No deliveries yet.')]));
  const outputRows = outputs.filter(visible).reverse().map(outputRow);
  $('outputs').replaceChildren(...(outputRows.length ? outputRows : [el('li', { class: 'empty' }, sessionFilter ? 'No outputs of this session in this page.' : 'No outputs yet.')]));
  // Forget elements of items that fell off the lists.
  for (const key of feedEls.keys()) if (!feed.some((entry) => entry.n === key)) feedEls.delete(key);
  for (const key of outputEls.keys()) if (!outputs.some((output) => output.id === key)) outputEls.delete(key);
}

const VERDICT_LABEL = {
  accepted: 'accepted',
  duplicate: 'duplicate',
  fuzzy_duplicate: 'fuzzy duplicate',
  correlated: 'correlated',
  ignored: 'ignored',
  looped: 'looped',
  rejected: 'rejected',
};

function feedRow(entry) {
  let row = feedEls.get(entry.n);
  if (!row) {
    const idButton = entry.id ? el('button', { type: 'button', class: 'id', title: `trace ${entry.id}`, on: { click: () => search(entry.platformId ?? entry.id) } }, entry.platformId ?? entry.id) : null;
    row = el('li', { class: `entry verdict-${entry.verdict}`, data: { n: String(entry.n), verdict: entry.verdict ?? '' } },
      el('div', { class: 'meta' },
        el('time', {}, time(entry.at)),
        el('span', { class: 'channel' }, entry.channel),
        entry.sessionKey ? el('span', { class: 'session' }, entry.sessionKey) : null,
        senderOf(entry),
        idButton),
      entry.preview ? el('p', { class: 'preview' }, entry.preview) : null,
      el('p', { class: 'verdict' },
        el('span', { class: 'badge' }, VERDICT_LABEL[entry.verdict] ?? entry.verdict ?? '?'),
        entry.reason ? el('span', { class: 'reason' }, entry.reason) : null,
        el('span', { class: 'merged' })));
    feedEls.set(entry.n, row);
  }
  // Only the accepted arrival went into the output; its duplicates did not.
  const merged = entry.verdict === 'accepted' ? mergedInto.get(entry.id) : undefined;
  const slot = row.querySelector('.merged');
  if (merged && !slot.hasChildNodes()) {
    append(slot, ['→ output ', el('button', { type: 'button', class: 'id', on: { click: () => search(merged.output) } }, short(merged.output)),
      merged.parts > 1 ? ` (merged ${merged.parts})` : '']);
  }
  return row;
}

function outputRow(output) {
  let row = outputEls.get(output.id);
  if (!row) {
    const partIds = output.messageIds ?? [];
    row = el('li', { class: 'output', data: { id: output.id } },
      el('div', { class: 'meta' },
        el('time', {}, output.timestamp ? time(output.timestamp * 1000) : ''),
        el('span', { class: 'seq' }, `#${output.seq}`),
        el('span', { class: 'type' }, output.type),
        el('span', { class: 'channel' }, output.channel ?? ''),
        el('span', { class: 'session' }, output.sessionKey ?? ''),
        senderOf(output),
        el('button', { type: 'button', class: 'id', title: `trace ${output.id}`, on: { click: () => search(output.id) } }, short(output.id))),
      output.content ? el('p', { class: 'content' }, output.content) : null,
      el('div', { class: 'parts' },
        el('span', { class: 'label' }, output.merged > 1 ? `merged ${output.merged} parts:` : 'part:'),
        partIds.map((id) => el('button', { type: 'button', class: 'id part', title: `trace ${id}`, on: { click: () => search(id) } }, id))),
      (output.media ?? []).length ? el('div', { class: 'media' }, output.media.map(mediaItem)) : null,
      (output.mediaErrors ?? []).length ? el('ul', { class: 'media-errors' }, output.mediaErrors.map((e) => el('li', {}, `media failed: ${e.reason} (${e.url})`))) : null,
      el('div', { class: 'foot' },
        output.replyBot ? el('span', { class: 'reply-bot' }, `reply bot: ${output.replyBot.channel}${output.replyBot.botId ? `/${output.replyBot.botId}` : ''}`) : null,
        el('span', { class: 'delivery' })));
    outputEls.set(output.id, row);
    const newest = outputs.length - outputs.indexOf(output) <= DELIVERY_LOOKUPS;
    if (newest && !deliveries.has(output.id)) {
      apiJson(`/v1/events/${encodeURIComponent(output.id)}`)
        .then((body) => {
          if (!deliveries.has(output.id) || deliveries.get(output.id).fromLookup) deliveries.set(output.id, { ...body.delivery, fromLookup: true });
          changed();
        })
        .catch(() => undefined);
    }
  }
  const delivery = deliveries.get(output.id);
  const slot = row.querySelector('.delivery');
  slot.dataset.state = delivery?.state ?? 'unknown';
  slot.textContent = delivery
    ? `delivery: ${delivery.state}${delivery.attempts ? `, ${delivery.attempts} attempt${delivery.attempts === 1 ? '' : 's'}` : ''}${delivery.lastError ? ` (${delivery.lastError})` : ''}`
    : 'delivery: …';
  return row;
}

/** Images as thumbnails, other files as download links; both fetched with the token, shown as blob: URLs. */
function mediaItem(item) {
  const url = `/v1/media/${item.path.split('/').map(encodeURIComponent).join('/')}`;
  const name = item.path.split('/').pop();
  const label = `${item.type} · ${item.mime} · ${formatBytes(item.bytes)}`;
  const blobOf = () => {
    if (!mediaUrls.has(item.path)) {
      mediaUrls.set(item.path, api(url).then(async (response) => {
        if (!response.ok) throw new Error(`media answered ${response.status}`);
        return URL.createObjectURL(await response.blob());
      }));
    }
    return mediaUrls.get(item.path);
  };
  if (item.type === 'image' && !item.path.startsWith('/')) {
    const img = el('img', { alt: label, title: label, class: 'thumb' });
    const figure = el('figure', { class: 'thumb-box' }, img, el('figcaption', {}, label));
    blobOf().then((src) => { img.src = src; }, () => { figure.classList.add('missing'); });
    return figure;
  }
  if (item.path.startsWith('/')) return el('span', { class: 'file', title: item.path }, `${name} (${label}; outside the working directory, not served)`);
  const link = el('a', { href: '#', class: 'file', download: name, title: label }, `${name} (${label})`);
  link.addEventListener('click', async (event) => {
    if (link.href.startsWith('blob:')) return;
    event.preventDefault();
    try {
      link.href = await blobOf();
      link.click();
    } catch {
      link.classList.add('missing');
    }
  });
  return link;
}

function formatBytes(n) {
  if (typeof n !== 'number') return '?';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

// ---------------------------------------------------------------------------------------------
// Feeds.

function onActivity(_event, entry) {
  if (entry.kind === 'verdict') {
    feed.push(entry);
    if (feed.length > MAX_FEED) feed.shift();
  } else if (entry.kind === 'batch') {
    for (const id of entry.messageIds ?? []) mergedInto.set(id, { output: entry.id, parts: entry.messageIds.length });
  } else if (entry.kind === 'delivery') {
    deliveries.set(entry.id, { state: entry.state, attempts: entry.attempts, lastError: entry.lastError });
    if (entry.state === 'dead' || entry.state === 'delivered') refreshDeadLetters();
  }
  changed();
}

function onOutput(_event, output) {
  if (!output || typeof output.id !== 'string') return;
  outputs.push(output);
  if (outputs.length > MAX_OUTPUTS) outputs.shift();
  changed();
}

// ---------------------------------------------------------------------------------------------
// Stats, the rate plot and dead letters.

const ACTIONS = ['received', 'deduped', 'fuzzy_deduped', 'correlated', 'debounced', 'emitted', 'rejected', 'ignored', 'looped'];
const snapshots = []; // { at, received, emitted }

async function pollStats() {
  try {
    const stats = await apiJson('/v1/stats');
    renderStats(stats);
  } catch (error) {
    $('stats-age').textContent = `stats unavailable: ${error.message}`;
  }
  await refreshDeadLetters();
  setTimeout(pollStats, STATS_EVERY_MS);
}

function renderStats(stats) {
  $('scope').replaceChildren(
    el('strong', {}, `Instance ${location.host}`),
    ': this instance\'s activity (feed, trail and counters are per instance); buffers, outbox and dead letters from store ',
    el('strong', { class: 'store-kind' }, String(stats.store ?? '?')),
    stats.store === 'redis' ? ' (shared by every instance on it)' : '');
  const channels = stats.channels ?? {};
  const rows = Object.keys(channels).sort().map((channel) => el('tr', { data: { channel } },
    el('th', { scope: 'row' }, channel),
    ACTIONS.map((action) => el('td', { data: { action } }, String(channels[channel][action] ?? 0)))));
  $('channels-table').tBodies[0].replaceChildren(...(rows.length ? rows : [el('tr', {}, el('td', { colSpan: ACTIONS.length + 1, class: 'empty' }, 'No traffic yet.'))]));

  const delivery = stats.delivery ?? {};
  const pairs = [
    ['open buffers', stats.debounce?.open ?? 0],
    ['flushing', stats.debounce?.flushing ?? 0],
    ['push', delivery.url ? 'on' : 'off'],
  ];
  if (delivery.url) pairs.push(['pending', delivery.pending], ['dead', delivery.dead], ['saturated', delivery.saturated ? 'YES' : 'no']);
  pairs.push(['streams', stats.streams ?? 0]);
  $('summary').replaceChildren(...pairs.flatMap(([key, value]) => [el('dt', {}, key), el('dd', { data: { key } }, String(value))]));
  $('stats-age').textContent = `updated ${time(Date.now())}`;

  let received = 0;
  let emitted = 0;
  for (const counts of Object.values(channels)) {
    received += counts.received ?? 0;
    emitted += counts.emitted ?? 0;
  }
  snapshots.push({ at: Date.now(), received, emitted });
  while (snapshots.length > 0 && snapshots[0].at < Date.now() - BUCKETS * BUCKET_MS - BUCKET_MS) snapshots.shift();
  drawRate();
}

/** Received and emitted per 10 s bucket, from the differences of successive snapshots. */
function drawRate() {
  const canvas = $('rate');
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 560;
  const height = canvas.clientHeight || 120;
  if (canvas.width !== Math.round(width * ratio)) {
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);

  const now = Date.now();
  const newestBucket = Math.floor(now / BUCKET_MS);
  const buckets = Array.from({ length: BUCKETS }, () => ({ received: 0, emitted: 0 }));
  for (let i = 1; i < snapshots.length; i++) {
    const index = BUCKETS - 1 - (newestBucket - Math.floor(snapshots[i].at / BUCKET_MS));
    if (index < 0) continue;
    // A restarted instance starts its counters at 0 again: no negative rates.
    buckets[index].received += Math.max(0, snapshots[i].received - snapshots[i - 1].received);
    buckets[index].emitted += Math.max(0, snapshots[i].emitted - snapshots[i - 1].emitted);
  }
  const max = Math.max(1, ...buckets.map((b) => Math.max(b.received, b.emitted)));
  const style = getComputedStyle(document.documentElement);
  const left = 28;
  const bottom = height - 14;
  const slot = (width - left) / BUCKETS;

  ctx.font = '10px system-ui, sans-serif';
  ctx.fillStyle = style.getPropertyValue('--muted').trim() || '#888';
  ctx.strokeStyle = style.getPropertyValue('--rule').trim() || '#ddd';
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(left, bottom + 0.5);
  ctx.lineTo(width, bottom + 0.5);
  ctx.stroke();
  ctx.textAlign = 'right';
  ctx.fillText(String(max), left - 4, 10);
  ctx.fillText('0', left - 4, bottom);
  ctx.textAlign = 'left';
  ctx.fillText('-5 min', left, height - 2);
  ctx.textAlign = 'right';
  ctx.fillText('now', width, height - 2);

  const bar = Math.max(1, slot / 2 - 1);
  buckets.forEach((b, i) => {
    const x = left + i * slot;
    ctx.fillStyle = style.getPropertyValue('--received').trim() || '#3b82f6';
    const hr = ((bottom - 14) * b.received) / max;
    ctx.fillRect(x, bottom - hr, bar, hr);
    ctx.fillStyle = style.getPropertyValue('--emitted').trim() || '#16a34a';
    const he = ((bottom - 14) * b.emitted) / max;
    ctx.fillRect(x + bar + 1, bottom - he, bar, he);
  });
}

let deadInFlight;
function refreshDeadLetters() {
  deadInFlight ??= (async () => {
    try {
      const body = await apiJson('/v1/deadletters?limit=100');
      renderDeadLetters(body);
    } catch (error) {
      $('dead-note').textContent = `dead letters unavailable: ${error.message}`;
    } finally {
      deadInFlight = undefined;
    }
  })();
  return deadInFlight;
}

function renderDeadLetters(body) {
  const list = body.deadletters ?? [];
  $('dead-count').textContent = String(body.count ?? list.length);
  $('retry-all').disabled = list.length === 0;
  $('dead-note').textContent = list.length === 0 ? 'None: every push to the agent was delivered or is still being tried.' : '';
  $('dead-list').replaceChildren(...list.map((letter) => el('li', { class: 'dead-letter', data: { id: letter.id } },
    el('div', { class: 'meta' },
      el('time', {}, letter.failedAt ? time(letter.failedAt) : ''),
      el('span', { class: 'channel' }, letter.channel ?? ''),
      el('span', { class: 'session' }, letter.sessionKey ?? ''),
      el('button', { type: 'button', class: 'id', on: { click: () => search(letter.id) } }, short(letter.id)),
      el('span', {}, `${letter.attempts} attempt${letter.attempts === 1 ? '' : 's'}`)),
    el('p', { class: 'error' }, letter.lastError ?? 'no error recorded'),
    el('button', { type: 'button', class: 'retry', on: { click: (event) => retry(event.currentTarget, `/v1/deadletters/${encodeURIComponent(letter.id)}/retry`) } }, 'Retry'))));
}

async function retry(button, path) {
  button.disabled = true;
  try {
    await apiJson(path, { method: 'POST' });
  } catch (error) {
    $('dead-note').textContent = `retry failed: ${error.message}`;
  }
  await refreshDeadLetters();
}

$('retry-all').addEventListener('click', (event) => retry(event.currentTarget, '/v1/deadletters/retry'));

// ---------------------------------------------------------------------------------------------
// Search: a platform message id or an output id goes to /v1/trace/:id; anything else is taken
// for a session key and filters the lists in this page.

$('search').addEventListener('submit', (event) => {
  event.preventDefault();
  search($('search-input').value.trim());
});
$('search-clear').addEventListener('click', () => search(''));

async function search(query) {
  $('search-input').value = query;
  $('search-clear').hidden = !query;
  setSessionFilter('');
  const panel = $('trace');
  if (!query) {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  panel.replaceChildren(el('p', { class: 'hint' }, `Tracing ${query}…`));
  let trace;
  try {
    trace = await apiJson(`/v1/trace/${encodeURIComponent(query)}`);
  } catch (error) {
    if (error.status !== 404) {
      panel.replaceChildren(el('p', { class: 'error' }, `Trace failed: ${error.message}`));
      return;
    }
  }
  if (trace) {
    panel.replaceChildren(renderTrace(trace));
    return;
  }
  setSessionFilter(query);
  const known = feed.some((e) => e.sessionKey === query) || outputs.some((o) => o.sessionKey === query);
  panel.replaceChildren(el('p', {},
    el('strong', {}, query), known
      ? ' is not a message or output id this instance knows; it matches a session key, so the lists below show only that session. The filter is applied in this page, to what the page has received since it opened.'
      : ' is not a message id, output id or session key this instance has seen (the trail is per instance and bounded).'));
}

function setSessionFilter(sessionKey) {
  sessionFilter = sessionKey;
  for (const id of ['feed-filter', 'outputs-filter']) {
    $(id).hidden = !sessionKey;
    $(id).textContent = sessionKey ? `Filtered in this page: session ${sessionKey}` : '';
  }
  changed();
}

function renderTrace(trace) {
  const section = el('div', { class: 'trace-body' }, el('h2', {}, 'Trace of ', el('code', {}, trace.id)));
  section.append(el('h3', {}, 'Arrivals and verdicts'));
  section.append(trace.arrivals.length
    ? el('ul', { class: 'rows' }, trace.arrivals.map((entry) => el('li', { class: `entry verdict-${entry.verdict}` },
      el('div', { class: 'meta' }, el('time', {}, time(entry.at)), el('span', { class: 'channel' }, entry.channel),
        entry.sessionKey ? el('span', { class: 'session' }, entry.sessionKey) : null, el('span', { class: 'id-text' }, entry.platformId ?? entry.id)),
      entry.preview ? el('p', { class: 'preview' }, entry.preview) : null,
      el('p', { class: 'verdict' }, el('span', { class: 'badge' }, VERDICT_LABEL[entry.verdict] ?? entry.verdict), entry.reason ? el('span', { class: 'reason' }, entry.reason) : null))))
    : el('p', { class: 'hint' }, 'No arrivals in this instance\'s trail (it may have arrived at another instance, or be older than the trail).'));
  section.append(el('h3', {}, 'Outputs'));
  section.append(trace.outputs.length
    ? el('ul', { class: 'rows' }, trace.outputs.map((output) => el('li', { class: 'trace-output', data: { id: output.id } },
      el('div', { class: 'meta' }, el('span', { class: 'seq' }, output.seq === null ? '' : `#${output.seq}`), el('span', { class: 'type' }, output.type ?? ''),
        el('span', { class: 'session' }, output.sessionKey ?? ''), el('span', { class: 'id-text' }, output.id)),
      el('div', { class: 'parts' }, el('span', { class: 'label' }, `${output.messageIds.length} part${output.messageIds.length === 1 ? '' : 's'}:`),
        output.messageIds.map((id) => el('span', { class: 'id-text part' }, id))),
      el('p', { class: 'delivery' }, output.delivery
        ? `delivery: ${output.delivery.state}, ${output.delivery.attempts} attempts${output.delivery.lastError ? ` (${output.delivery.lastError})` : ''}`
        : output.retained ? 'delivery: unknown' : 'no longer retained (events.retentionMs / retentionCount)'))))
    : el('p', { class: 'hint' }, 'Not in an output yet (still in its debounce window, or a duplicate).'));
  if (trace.attempts.length) {
    section.append(el('h3', {}, 'Push attempts'));
    section.append(el('ul', { class: 'rows' }, trace.attempts.map((entry) => el('li', {},
      `${time(entry.at)} ${short(entry.id)}: ${entry.state} after ${entry.attempts} attempt${entry.attempts === 1 ? '' : 's'}${entry.lastError ? ` (${entry.lastError})` : ''}`))));
  }
  return section;
}

// ---------------------------------------------------------------------------------------------
// Start.

changed();
follow('/v1/activity', $('live-activity'), onActivity);
follow('/v1/events', $('live-events'), onOutput);
pollStats();
startConnections({ apiJson, everyMs: STATS_EVERY_MS });
