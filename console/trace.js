// Search: a platform message id or an output id goes to /v1/trace/:id and its trail is shown;
// anything else is taken for a session key and filters the lists in this page.

import { apiJson } from './api.js';
import { $, counted, el, short, time } from './dom.js';
import { VERDICT_LABEL } from './lists.js';

/**
 * Wire the search form. `sessionSeen(key)` says whether the page has seen that session,
 * `setSessionFilter(key)` filters the lists to it ('' for all). Returns `search(query)`.
 */
export function createSearch({ sessionSeen, setSessionFilter }) {
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
      trace = await apiJson(`v1/trace/${encodeURIComponent(query)}`);
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
    const known = sessionSeen(query);
    panel.replaceChildren(
      el(
        'p',
        {},
        el('strong', {}, query),
        known
          ? ' is not a message or output id the trail knows; it matches a session key, so the lists below show only that session. The filter is applied in this page, to what the page has received since it opened.'
          : ' is not a message id, output id or session key the service has seen recently (the trail is bounded: trace.retentionMs and trace.maxEntries).',
      ),
    );
  }

  $('search').addEventListener('submit', (event) => {
    event.preventDefault();
    search($('search-input').value.trim());
  });
  $('search-clear').addEventListener('click', () => search(''));
  return search;
}

function renderTrace(trace) {
  const section = el('div', { class: 'trace-body' }, el('h2', {}, 'Trace of ', el('code', {}, trace.id)));
  section.append(el('h3', {}, 'Arrivals and verdicts'));
  section.append(
    trace.arrivals.length
      ? el(
          'ul',
          { class: 'rows' },
          trace.arrivals.map((entry) =>
            el(
              'li',
              { class: `entry verdict-${entry.verdict}` },
              el(
                'div',
                { class: 'meta' },
                el('time', {}, time(entry.at)),
                el('span', { class: 'channel' }, entry.bot ? `${entry.channel}/${entry.bot}` : entry.channel),
                entry.sessionKey ? el('span', { class: 'session' }, entry.sessionKey) : null,
                el('span', { class: 'id-text' }, entry.platformId ?? entry.id),
                entry.instance
                  ? el('span', { class: 'instance', title: 'the instance that recorded it' }, `@${entry.instance}`)
                  : null,
              ),
              entry.preview ? el('p', { class: 'preview' }, entry.preview) : null,
              el(
                'p',
                { class: 'verdict' },
                el('span', { class: 'badge' }, VERDICT_LABEL[entry.verdict] ?? entry.verdict),
                entry.reason ? el('span', { class: 'reason' }, entry.reason) : null,
              ),
            ),
          ),
        )
      : el(
          'p',
          { class: 'hint' },
          'No arrivals in the trail (older than trace.retentionMs, or past trace.maxEntries).',
        ),
  );
  section.append(el('h3', {}, 'Outputs'));
  section.append(
    trace.outputs.length
      ? el(
          'ul',
          { class: 'rows' },
          trace.outputs.map((output) =>
            el(
              'li',
              { class: 'trace-output', data: { id: output.id } },
              el(
                'div',
                { class: 'meta' },
                el('span', { class: 'seq' }, output.seq === null ? '' : `#${output.seq}`),
                el('span', { class: 'type' }, output.type ?? ''),
                el('span', { class: 'session' }, output.sessionKey ?? ''),
                el('span', { class: 'id-text' }, output.id),
              ),
              el(
                'div',
                { class: 'parts' },
                el('span', { class: 'label' }, `${counted(output.messageIds.length, 'part')}:`),
                output.messageIds.map((id) => el('span', { class: 'id-text part' }, id)),
              ),
              el(
                'p',
                { class: 'delivery' },
                output.delivery
                  ? `delivery: ${output.delivery.state}, ${counted(output.delivery.attempts, 'attempt')}${output.delivery.lastError ? ` (${output.delivery.lastError})` : ''}`
                  : output.retained
                    ? 'delivery: unknown'
                    : 'no longer retained (events.retentionMs / retentionCount)',
              ),
            ),
          ),
        )
      : el('p', { class: 'hint' }, 'Not in an output yet (still in its debounce window, or a duplicate).'),
  );
  if (trace.attempts.length) {
    section.append(el('h3', {}, 'Push attempts'));
    section.append(
      el(
        'ul',
        { class: 'rows' },
        trace.attempts.map((entry) =>
          el(
            'li',
            {},
            `${time(entry.at)} ${short(entry.id)}${entry.instance ? ` @${entry.instance}` : ''}: ${entry.state} after ${counted(entry.attempts, 'attempt')}${entry.lastError ? ` (${entry.lastError})` : ''}`,
          ),
        ),
      ),
    );
  }
  return section;
}
