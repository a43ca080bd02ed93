// The Deliveries and Outputs lists: the verdicts of /v1/activity and the outputs of /v1/events,
// newest first, rendered on the next animation frame after they change, optionally filtered in
// the page to one session. The activity stream also says which output an arrival was merged
// into and how each output's delivery went.

import { apiJson } from './api.js';
import { $, counted, el, short, time } from './dom.js';
import { mediaItem } from './media.js';

const MAX_FEED = 300;
const MAX_OUTPUTS = 100;
/** Outputs whose delivery state is fetched from /v1/events/:id (the rest follow the activity feed). */
const DELIVERY_LOOKUPS = 30;
/**
 * How often those still pending are looked up again: a worker's claim (agent.claims) changes
 * their attempt and lease without an activity entry (only its outcome has one).
 */
const PENDING_LOOKUP_MS = 3000;

export const VERDICT_LABEL = {
  accepted: 'accepted',
  duplicate: 'duplicate',
  fuzzy_duplicate: 'fuzzy duplicate',
  correlated: 'correlated',
  ignored: 'ignored',
  looped: 'looped',
  rejected: 'rejected',
  context: 'kept as context',
  denied: 'denied',
  over_budget: 'over budget',
  retracted: 'recalled',
  edited: 'edited',
  human_active: 'held: a person answers',
};

/** What a second thought says, on its output's row (its output id links to the output it is about). */
const thoughtOf = (output, link) => {
  if (output.type === 'chat.retracted')
    return el('p', { class: 'thought' }, 'message recalled from output ', link(output.outputId));
  if (output.type === 'chat.edited')
    return el('p', { class: 'thought' }, 'message edited in output ', link(output.outputId), `: ${output.content}`);
  if (output.type === 'chat.takeover')
    return el(
      'p',
      { class: 'thought' },
      output.active
        ? `a person answers until ${new Date(output.until).toLocaleTimeString()}`
        : 'the person is done: the agent answers again',
    );
  return null;
};

/** An output's context: the conversation since the previous output, folded until opened. */
const contextOf = (output) =>
  el(
    'details',
    { class: 'context' },
    el(
      'summary',
      {},
      `context: ${output.context.length} message${output.context.length === 1 ? '' : 's'}` +
        (output.contextDropped ? ` (${output.contextDropped} left out)` : ''),
    ),
    el(
      'ol',
      {},
      output.context.map((message) =>
        el(
          'li',
          {},
          el('span', { class: 'sender' }, message.sender.name ?? message.sender.id),
          ': ',
          message.content,
          message.media.length ? ` [${message.media.map((item) => item.type).join(', ')}]` : '',
        ),
      ),
    ),
  );

/** A sender worth showing: named, or not just the session key again (generic messages without a sender). */
const senderOf = (item) => {
  const sender = item.sender;
  if (!sender || (!sender.name && sender.id === item.sessionKey)) return null;
  return el('span', { class: 'sender' }, sender.name ? `${sender.name} (${sender.id})` : sender.id);
};

/** `, claimed: attempt 2, lease until 12:00:30` while a worker holds the output (agent.claims). */
function claimText(claimed) {
  return claimed ? `, claimed: attempt ${claimed.attempt}, lease until ${time(claimed.leaseUntil)}` : '';
}

/**
 * The two lists. `trace(id)` is called when an id in them is clicked; `refreshDeadLetters()`
 * when a delivery outcome (delivered or dead) arrives.
 */
export function createLists({ trace, refreshDeadLetters }) {
  const feed = []; // verdict entries, oldest first
  const outputs = []; // outputs, oldest first
  const mergedInto = new Map(); // event id -> { output, parts }
  const keptAsContext = new Set(); // ids of messages kept as their conversation's context
  const carriedBy = new Map(); // id of a context message -> the output that carried it
  const deliveries = new Map(); // output id -> { state, attempts, lastError, claimed? }
  const feedEls = new Map();
  const outputEls = new Map();
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
    $('feed').replaceChildren(
      ...(feedRows.length
        ? feedRows
        : [
            el(
              'li',
              { class: 'empty' },
              sessionFilter ? 'No deliveries of this session in this page.' : 'No deliveries yet.',
            ),
          ]),
    );
    const outputRows = outputs.filter(visible).reverse().map(outputRow);
    $('outputs').replaceChildren(
      ...(outputRows.length
        ? outputRows
        : [
            el(
              'li',
              { class: 'empty' },
              sessionFilter ? 'No outputs of this session in this page.' : 'No outputs yet.',
            ),
          ]),
    );
    // Forget elements of items that fell off the lists.
    for (const key of feedEls.keys()) if (!feed.some((entry) => entry.n === key)) feedEls.delete(key);
    for (const key of outputEls.keys()) if (!outputs.some((output) => output.id === key)) outputEls.delete(key);
  }

  function feedRow(entry) {
    let row = feedEls.get(entry.n);
    if (!row) {
      const idButton = entry.id
        ? el(
            'button',
            {
              type: 'button',
              class: 'id',
              title: `trace ${entry.id}`,
              on: { click: () => trace(entry.platformId ?? entry.id) },
            },
            entry.platformId ?? entry.id,
          )
        : null;
      row = el(
        'li',
        { class: `entry verdict-${entry.verdict}`, data: { n: String(entry.n), verdict: entry.verdict ?? '' } },
        el(
          'div',
          { class: 'meta' },
          el('time', {}, time(entry.at)),
          el('span', { class: 'channel' }, entry.bot ? `${entry.channel}/${entry.bot}` : entry.channel),
          entry.sessionKey ? el('span', { class: 'session' }, entry.sessionKey) : null,
          senderOf(entry),
          idButton,
          entry.instance
            ? el('span', { class: 'instance', title: 'the instance that recorded it' }, `@${entry.instance}`)
            : null,
        ),
        entry.preview ? el('p', { class: 'preview' }, entry.preview) : null,
        el(
          'p',
          { class: 'verdict' },
          el('span', { class: 'badge' }, VERDICT_LABEL[entry.verdict] ?? entry.verdict ?? '?'),
          entry.reason ? el('span', { class: 'reason' }, entry.reason) : null,
          el('span', { class: 'merged' }),
        ),
      );
      feedEls.set(entry.n, row);
    }
    // Only the accepted arrival went into the output (or the context); its duplicates did not.
    const accepted = entry.verdict === 'accepted';
    const key = entry.platformId ?? entry.id;
    const merged = accepted ? mergedInto.get(entry.id) : undefined;
    const carrier = accepted || entry.verdict === 'context' ? carriedBy.get(key) : undefined;
    const slot = row.querySelector('.merged');
    const link = (output) =>
      el('button', { type: 'button', class: 'id', on: { click: () => trace(output) } }, short(output));
    if (merged)
      slot.replaceChildren(...['→ output ', link(merged.output), merged.parts > 1 ? ` (merged ${merged.parts})` : '']);
    else if (carrier) slot.replaceChildren('→ context of output ', link(carrier));
    else if (accepted && keptAsContext.has(key)) slot.replaceChildren('→ kept as context');
    return row;
  }

  function outputRow(output) {
    let row = outputEls.get(output.id);
    if (!row) {
      const partIds = output.messageIds ?? [];
      row = el(
        'li',
        { class: 'output', data: { id: output.id } },
        el(
          'div',
          { class: 'meta' },
          el('time', {}, output.timestamp ? time(output.timestamp * 1000) : ''),
          el('span', { class: 'seq' }, `#${output.seq}`),
          el('span', { class: 'type' }, output.type),
          el('span', { class: 'channel' }, output.channel ?? ''),
          el('span', { class: 'session' }, output.sessionKey ?? ''),
          senderOf(output),
          el(
            'button',
            { type: 'button', class: 'id', title: `trace ${output.id}`, on: { click: () => trace(output.id) } },
            short(output.id),
          ),
        ),
        output.content && output.type !== 'chat.edited' ? el('p', { class: 'content' }, output.content) : null,
        thoughtOf(output, (id) =>
          el(
            'button',
            { type: 'button', class: 'id', title: `trace ${id}`, on: { click: () => trace(id) } },
            short(id),
          ),
        ),
        output.trigger && output.trigger !== 'always'
          ? el('p', { class: 'trigger' }, `reached the agent by ${output.trigger}`)
          : null,
        (output.context ?? []).length ? contextOf(output) : null,
        el(
          'div',
          { class: 'parts' },
          el('span', { class: 'label' }, output.merged > 1 ? `merged ${output.merged} parts:` : 'part:'),
          partIds.map((id) =>
            el(
              'button',
              { type: 'button', class: 'id part', title: `trace ${id}`, on: { click: () => trace(id) } },
              id,
            ),
          ),
        ),
        (output.media ?? []).length ? el('div', { class: 'media' }, output.media.map(mediaItem)) : null,
        (output.mediaErrors ?? []).length
          ? el(
              'ul',
              { class: 'media-errors' },
              output.mediaErrors.map((e) => el('li', {}, `media failed: ${e.reason} (${e.url})`)),
            )
          : null,
        el(
          'div',
          { class: 'foot' },
          output.replyBot
            ? el(
                'span',
                { class: 'reply-bot' },
                `reply bot: ${output.replyBot.channel}${output.replyBot.botId ? `/${output.replyBot.botId}` : ''}`,
              )
            : null,
          el('span', { class: 'delivery' }),
        ),
      );
      outputEls.set(output.id, row);
      const newest = outputs.length - outputs.indexOf(output) <= DELIVERY_LOOKUPS;
      if (newest && !deliveries.has(output.id)) lookUp(output.id);
    }
    const delivery = deliveries.get(output.id);
    const slot = row.querySelector('.delivery');
    slot.dataset.state = delivery?.state ?? 'unknown';
    // The attempt a worker holds now, for styles and tests.
    if (delivery?.claimed) slot.dataset.claimed = String(delivery.claimed.attempt);
    else delete slot.dataset.claimed;
    slot.textContent = delivery
      ? `delivery: ${delivery.state}${delivery.attempts ? `, ${counted(delivery.attempts, 'attempt')}` : ''}${delivery.lastError ? ` (${delivery.lastError})` : ''}${claimText(delivery.claimed)}`
      : 'delivery: …';
    return row;
  }

  /** An output's delivery as /v1/events/:id has it, unless an activity entry told a newer one. */
  function lookUp(id) {
    apiJson(`v1/events/${encodeURIComponent(id)}`)
      .then((body) => {
        if (!deliveries.has(id) || deliveries.get(id).fromLookup)
          deliveries.set(id, { ...body.delivery, fromLookup: true });
        changed();
      })
      .catch(() => undefined);
  }

  // The newest outputs still pending, looked up again: a claim by a worker shows as it is taken.
  setInterval(() => {
    for (const output of outputs.slice(-DELIVERY_LOOKUPS))
      if (deliveries.get(output.id)?.state === 'pending') lookUp(output.id);
  }, PENDING_LOOKUP_MS);

  /** A frame of /v1/activity: a verdict, a batch (arrivals merged into an output) or a delivery outcome. */
  function onActivity(_event, entry) {
    if (entry.kind === 'verdict') {
      feed.push(entry);
      if (feed.length > MAX_FEED) feed.shift();
      if (entry.verdict === 'context') for (const id of entry.messageIds ?? []) keptAsContext.add(id);
    } else if (entry.kind === 'batch' && entry.verdict === 'context') {
      // An output carrying kept messages as its context.
      for (const id of entry.messageIds ?? []) carriedBy.set(id, entry.id);
    } else if (entry.kind === 'batch') {
      for (const id of entry.messageIds ?? []) mergedInto.set(id, { output: entry.id, parts: entry.messageIds.length });
    } else if (entry.kind === 'delivery') {
      deliveries.set(entry.id, { state: entry.state, attempts: entry.attempts, lastError: entry.lastError });
      if (entry.state === 'dead' || entry.state === 'delivered') refreshDeadLetters();
    }
    changed();
  }

  /** A frame of /v1/events: an output. */
  function onOutput(_event, output) {
    if (!output || typeof output.id !== 'string') return;
    outputs.push(output);
    if (outputs.length > MAX_OUTPUTS) outputs.shift();
    changed();
  }

  /** Show only one session's deliveries and outputs ('' for all), with a note above each list. */
  function setSessionFilter(sessionKey) {
    sessionFilter = sessionKey;
    for (const id of ['feed-filter', 'outputs-filter']) {
      $(id).hidden = !sessionKey;
      $(id).textContent = sessionKey ? `Filtered in this page: session ${sessionKey}` : '';
    }
    changed();
  }

  /** Whether this page has received a delivery or an output of that session. */
  const sessionSeen = (sessionKey) =>
    feed.some((e) => e.sessionKey === sessionKey) || outputs.some((o) => o.sessionKey === sessionKey);

  return { changed, onActivity, onOutput, setSessionFilter, sessionSeen };
}
