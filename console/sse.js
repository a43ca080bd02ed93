// Server-Sent Events over fetch (EventSource cannot send an Authorization header).

import { api } from './api.js';

/**
 * Read an SSE endpoint from `after=0`, calling `onFrame(event, data)` per frame, and reconnect
 * with `after=<last id>` when the connection ends. `indicator.dataset.state` is `on` while the
 * stream is open, `off` otherwise. An id is `<seq>` or `<seq>@<life>` and goes back as it came:
 * the life tells the service whether the seq is still the store's.
 */
export async function follow(path, indicator, onFrame) {
  let last = '0';
  let retryMs = 2000;
  for (;;) {
    let response;
    try {
      response = await api(`${path}?after=${encodeURIComponent(last)}`, { headers: { Accept: 'text/event-stream' } });
    } catch {
      response = undefined;
    }
    if (response?.status === 409) last = '0'; // resume point ahead of the store: it was reset
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
            if (frame.id !== undefined && /^\d+(@[\w-]+)?$/.test(frame.id)) last = frame.id;
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
