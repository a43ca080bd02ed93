// The Dead letters panel from GET /v1/deadletters: pushes the agent refused for good, with
// Retry (POST /v1/deadletters/:id/retry) and Retry all (POST /v1/deadletters/retry).

import { apiJson } from './api.js';
import { $, counted, el, short, time } from './dom.js';

/**
 * Wire the panel; `trace(id)` is called when a letter's id is clicked. Returns `refresh()`,
 * which reloads the list (one request at a time: a call while one is running shares it).
 */
export function createDeadLetters({ trace }) {
  let deadInFlight;
  function refresh() {
    deadInFlight ??= (async () => {
      try {
        const body = await apiJson('v1/deadletters?limit=100');
        render(body);
      } catch (error) {
        $('dead-note').textContent = `dead letters unavailable: ${error.message}`;
      } finally {
        deadInFlight = undefined;
      }
    })();
    return deadInFlight;
  }

  function render(body) {
    const list = body.deadletters ?? [];
    $('dead-count').textContent = String(body.count ?? list.length);
    $('retry-all').disabled = list.length === 0;
    $('dead-note').textContent =
      list.length === 0 ? 'None: every push to the agent was delivered or is still being tried.' : '';
    $('dead-list').replaceChildren(
      ...list.map((letter) =>
        el(
          'li',
          { class: 'dead-letter', data: { id: letter.id } },
          el(
            'div',
            { class: 'meta' },
            el('time', {}, letter.failedAt ? time(letter.failedAt) : ''),
            el('span', { class: 'channel' }, letter.channel ?? ''),
            el('span', { class: 'session' }, letter.sessionKey ?? ''),
            el('button', { type: 'button', class: 'id', on: { click: () => trace(letter.id) } }, short(letter.id)),
            el('span', {}, counted(letter.attempts, 'attempt')),
          ),
          el('p', { class: 'error' }, letter.lastError ?? 'no error recorded'),
          el(
            'button',
            {
              type: 'button',
              class: 'retry',
              on: {
                click: (event) => retry(event.currentTarget, `v1/deadletters/${encodeURIComponent(letter.id)}/retry`),
              },
            },
            'Retry',
          ),
        ),
      ),
    );
  }

  async function retry(button, path) {
    button.disabled = true;
    try {
      await apiJson(path, { method: 'POST' });
    } catch (error) {
      $('dead-note').textContent = `retry failed: ${error.message}`;
    }
    await refresh();
  }

  $('retry-all').addEventListener('click', (event) => retry(event.currentTarget, 'v1/deadletters/retry'));
  return { refresh };
}
