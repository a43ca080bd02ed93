// The Channels panel from GET /v1/stats: the scope line in the header, per-channel counts by
// action, the summary (buffers, push, streams) and a plot of received and emitted per 10 s.

import { apiJson } from './api.js';
import { $, el, time } from './dom.js';

const BUCKET_MS = 10_000;
const BUCKETS = 30;
const ACTIONS = [
  'received',
  'deduped',
  'fuzzy_deduped',
  'correlated',
  'debounced',
  'held',
  'emitted',
  'rejected',
  'ignored',
  'looped',
  'context',
  'denied',
  'over_budget',
  'retracted',
  'edited',
  'human_active',
];
const snapshots = []; // { at, received, emitted }

/** Poll `v1/stats` every `everyMs`, refreshing the dead letters after each poll. */
export function startStats({ everyMs, refreshDeadLetters }) {
  const pollStats = async () => {
    try {
      const stats = await apiJson('v1/stats');
      renderStats(stats);
    } catch (error) {
      $('stats-age').textContent = `stats unavailable: ${error.message}`;
    }
    await refreshDeadLetters();
    setTimeout(pollStats, everyMs);
  };
  void pollStats();
}

function renderStats(stats) {
  const instances = stats.instances ?? [];
  $('scope').replaceChildren(
    'Served by instance ',
    el('strong', { class: 'served-by' }, String(stats.instance ?? location.host)),
    instances.length > 1
      ? `: feed, trail and counters of all ${instances.length} instances on store `
      : ': feed, trail and counters of this instance, the whole deployment on store ',
    el('strong', { class: 'store-kind' }, String(stats.store ?? '?')),
  );
  const live = instances.filter((line) => line.live).length;
  $('instances').replaceChildren(
    ...(instances.length > 1
      ? instances.map((line) =>
          el(
            'li',
            { data: { instance: line.instance, live: String(line.live) } },
            el('span', { class: 'instance' }, line.instance),
            line.instance === stats.instance ? ' (this page) ' : ' ',
            `received ${line.counts?.received ?? 0}, emitted ${line.counts?.emitted ?? 0}`,
            line.live ? '' : `, not heard from since ${time(line.at)}`,
          ),
        )
      : []),
  );
  $('instances').hidden = instances.length <= 1;
  $('instances').title = `${live} of ${instances.length} instances live`;
  const channels = stats.channels ?? {};
  const rows = Object.keys(channels)
    .sort()
    .map((channel) =>
      el(
        'tr',
        { data: { channel } },
        el('th', { scope: 'row' }, channel),
        ACTIONS.map((action) => el('td', { data: { action } }, String(channels[channel][action] ?? 0))),
      ),
    );
  $('channels-table').tBodies[0].replaceChildren(
    ...(rows.length
      ? rows
      : [el('tr', {}, el('td', { colSpan: ACTIONS.length + 1, class: 'empty' }, 'No traffic yet.'))]),
  );

  const delivery = stats.delivery ?? {};
  const pairs = [
    ['open buffers', stats.debounce?.open ?? 0],
    ['flushing', stats.debounce?.flushing ?? 0],
    ['push', delivery.url ? 'on' : 'off'],
  ];
  // Agent workers pulling outputs (agent.claims): claims out from this instance, polls waiting on it.
  if (delivery.claims)
    pairs.push(['claims', 'on'], ['claimed', delivery.claims.outstanding], ['polls', delivery.claims.polls]);
  if (delivery.url || delivery.claims)
    pairs.push(
      ['pending', delivery.pending],
      ['dead', delivery.dead],
      ['saturated', delivery.saturated ? 'YES' : 'no'],
    );
  pairs.push(['streams', stats.streams ?? 0]);
  // Agent turns, when a channel keeps them: open turns and the messages they hold, per session.
  if (stats.turns) pairs.push(['open turns', stats.turns.open], ['held', stats.turns.held]);
  $('summary').replaceChildren(
    ...pairs.flatMap(([key, value]) => [el('dt', {}, key), el('dd', { data: { key } }, String(value))]),
  );
  $('turns').replaceChildren(
    ...(stats.turns?.sessions ?? []).map((turn) =>
      el(
        'li',
        { data: { session: turn.sessionKey } },
        el('span', { class: 'session' }, turn.sessionKey),
        ' ',
        turn.open
          ? el('span', { class: 'turn-open' }, `turn ${turn.outputId} open`)
          : el('span', { class: 'turn-closed' }, 'turn closed, releasing'),
        ' ',
        el('span', { class: 'held', data: { held: String(turn.held) } }, `${turn.held} held`),
      ),
    ),
  );
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
