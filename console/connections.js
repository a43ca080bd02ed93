// The Connections panel: the bot WebSocket connections of GET /v1/connections (OneBot reverse
// WebSocket, or the bot's forward WebSocket we dial; `transport` tells which kind a row is),
// polled like the stats.

import { $, el, time } from './dom.js';

const STATES = new Set(['open', 'connecting', 'closed']);
/** An open connection whose last heartbeat is older than this many announced intervals is late. */
const LATE_AFTER_BEATS = 3;

/** "just now", "12 s ago", "4 min ago", "3 h ago", "2 d ago" (clocks of server and page may differ a little). */
export function ago(ms, now = Date.now()) {
  const s = Math.floor((now - ms) / 1000);
  if (s < 1) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

const every = (ms) => (ms % 1000 === 0 ? `every ${ms / 1000} s` : `every ${ms} ms`);

/** A time cell: relative text, the absolute time in the title; "never" for null. */
function when(ms, now, cls) {
  if (typeof ms !== 'number') return el('td', { class: `${cls} never` }, 'never');
  const at = new Date(ms);
  return el(
    'td',
    { class: cls },
    el('time', { dateTime: at.toISOString(), title: `${at.toLocaleDateString()} ${time(ms)}` }, ago(ms, now)),
  );
}

function row(connection, now) {
  const state = STATES.has(connection.state) ? connection.state : 'other';
  const beat = connection.lastHeartbeatAt;
  const late =
    state === 'open' &&
    typeof beat === 'number' &&
    connection.heartbeatMs > 0 &&
    now - beat > LATE_AFTER_BEATS * connection.heartbeatMs;
  const heartbeat = when(beat, now, 'heartbeat');
  if (connection.heartbeatMs > 0)
    heartbeat.append(' ', el('span', { class: 'hint interval' }, every(connection.heartbeatMs)));
  if (late) {
    heartbeat.classList.add('late');
    heartbeat.append(' ', el('span', { class: 'late-note' }, 'late'));
  }
  return el(
    'tr',
    {
      class: `connection state-${state}`,
      data: {
        channel: String(connection.channel ?? ''),
        bot: String(connection.botId ?? ''),
        role: String(connection.role ?? ''),
        state,
      },
    },
    el('th', { scope: 'row', class: 'channel' }, String(connection.channel ?? '')),
    el('td', { class: 'transport' }, String(connection.transport ?? '')),
    el('td', { class: 'bot' }, String(connection.botId ?? '')),
    el('td', { class: 'role' }, String(connection.role ?? '')),
    el('td', { class: 'instance' }, String(connection.instance ?? '')),
    el('td', { class: 'state' }, el('span', { class: 'badge' }, String(connection.state ?? '?'))),
    when(connection.connectedAt, now, 'connected'),
    when(connection.lastEventAt, now, 'event'),
    heartbeat,
    el('td', { class: 'reconnects' }, String(connection.reconnects ?? 0)),
  );
}

function empty(columns) {
  return el(
    'tr',
    {},
    el(
      'td',
      { colSpan: columns, class: 'empty' },
      'No bot is connected. A channel with ',
      el('code', {}, '"transport": "ws-reverse"'),
      ' lets bots (NapCat, Lagrange, …) connect to ',
      el('code', {}, '/webhooks/<id>'),
      ' of this service; with ',
      el('code', {}, '"transport": "ws"'),
      " the service dials the bot's forward WebSocket at the channel's ",
      el('code', {}, 'url'),
      '. Without a public URL: a ',
      el('code', {}, '"discord"'),
      ' channel holds the Discord Gateway, Slack ',
      el('code', {}, '"transport": "socket"'),
      ' holds a Socket Mode connection, Telegram ',
      el('code', {}, '"transport": "poll"'),
      ' long-polls getUpdates; one instance holds each.',
    ),
  );
}

function render(connections) {
  const table = $('connections-table');
  const now = Date.now();
  const columns = table.tHead.rows[0].cells.length;
  table.tBodies[0].replaceChildren(...(connections.length ? connections.map((c) => row(c, now)) : [empty(columns)]));
  const open = connections.filter((c) => c.state === 'open').length;
  $('connections-count').textContent = String(open);
  $('connections-count').title = `${open} open of ${connections.length} listed`;
}

/** Poll `v1/connections` with the page's `apiJson` every `everyMs`; a failure shows an error line and keeps the last rows. */
export function startConnections({ apiJson, everyMs }) {
  const error = $('connections-error');
  const poll = async () => {
    try {
      const body = await apiJson('v1/connections');
      render(Array.isArray(body.connections) ? body.connections : []);
      error.hidden = true;
      error.textContent = '';
      $('connections-age').textContent = `updated ${time(Date.now())}`;
    } catch (failure) {
      error.textContent = `connections unavailable: ${failure.message}`;
      error.hidden = false;
    }
    setTimeout(poll, everyMs);
  };
  void poll();
}
