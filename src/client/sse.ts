/** One event of a stream: the last id the stream set, its type (`message` unless named) and its data. */
export interface SseFrame {
  id: string | undefined;
  event: string;
  data: string;
}

/**
 * The events of a `text/event-stream` body as they arrive, read as the HTML standard's
 * event-stream interpretation says (html.spec.whatwg.org/multipage/server-sent-events.html):
 * lines end in CRLF, LF or CR; `field: value` (one space after the colon dropped); `data` lines
 * joined with LF; a blank line dispatches, unless no data came; `:` lines are comments; an `id`
 * holds for the events after it until the next one. `retry` is left to the caller's own backoff.
 * `onChunk` is called as each chunk arrives (a heartbeat comment too).
 */
export async function* sseFrames(body: AsyncIterable<Uint8Array>, onChunk: () => void): AsyncGenerator<SseFrame> {
  const decoder = new TextDecoder();
  let rest = '';
  let id: string | undefined;
  let event = '';
  let data: string[] = [];
  for await (const chunk of body) {
    onChunk();
    const text = rest + decoder.decode(chunk, { stream: true });
    // A CR at the end may be the first half of a CRLF: it waits for the next chunk.
    const cut = text.endsWith('\r') ? text.length - 1 : text.length;
    const lines = text.slice(0, cut).split(/\r\n|\r|\n/);
    rest = (lines.pop() as string) + text.slice(cut);
    for (const line of lines) {
      if (line === '') {
        if (data.length > 0) yield { id, event: event || 'message', data: data.join('\n') };
        event = '';
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') data.push(value);
      else if (field === 'event') event = value;
      else if (field === 'id' && !value.includes('\0')) id = value;
    }
  }
}
