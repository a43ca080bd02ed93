import { describe, expect, it } from 'vitest';
import { sseFrames, type SseFrame } from '../../src/client/sse.js';

async function framesOf(chunks: string[]): Promise<SseFrame[]> {
  async function* body() {
    for (const chunk of chunks) yield new TextEncoder().encode(chunk);
  }
  const frames: SseFrame[] = [];
  for await (const frame of sseFrames(body(), () => undefined)) frames.push(frame);
  return frames;
}

describe('sseFrames', () => {
  it('reads events split anywhere across chunks, a CRLF split between two included', async () => {
    const text =
      'retry: 2000\r\n\r\nid: 1@L\r\nevent: chat.notice\r\ndata: {"a":1}\r\n\r\n: keep-alive\r\n\r\nid: 2@L\r\ndata: x\r\n\r\n';
    const whole = await framesOf([text]);
    expect(whole).toEqual([
      { id: '1@L', event: 'chat.notice', data: '{"a":1}' },
      { id: '2@L', event: 'message', data: 'x' },
    ]);
    for (let at = 1; at < text.length; at++) expect(await framesOf([text.slice(0, at), text.slice(at)])).toEqual(whole);
  });

  it('joins data lines with LF, keeps the last id for the events after it, and dispatches nothing without data', async () => {
    expect(await framesOf(['id: 7\nevent: gap\n\nevent: gap\ndata: {"after":\ndata:1}\n\r', 'data\n\n'])).toEqual([
      { id: '7', event: 'gap', data: '{"after":\n1}' },
      { id: '7', event: 'message', data: '' },
    ]);
  });

  it('drops an event the stream ended in the middle of', async () => {
    expect(await framesOf(['data: whole\n\ndata: cut'])).toEqual([{ id: undefined, event: 'message', data: 'whole' }]);
  });
});
