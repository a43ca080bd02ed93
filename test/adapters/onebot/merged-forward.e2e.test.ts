import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { ProcessedMessage } from '../../../src/events/output.js';
import { fixture } from '../../fixtures/index.js';
import { startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';

type Frame = { action: string; params: { id?: string }; echo: string };

/** A bot on a reverse WebSocket that answers get_forward_msg from `forwards` (by id), or never. */
async function bot(service: Running, forwards: Map<string, unknown[]> | undefined) {
  const socket = new WebSocket(`${service.url.replace('http', 'ws')}/webhooks/qq-ws`, {
    headers: { authorization: 'Bearer tok', 'x-self-id': '10001000', 'x-client-role': 'Universal' },
  });
  const asked: string[] = [];
  socket.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as Frame;
    if (frame.action !== 'get_forward_msg') return;
    asked.push(frame.params.id ?? '');
    if (!forwards) return;
    const messages = forwards.get(frame.params.id ?? '');
    socket.send(
      JSON.stringify(
        messages
          ? { status: 'ok', retcode: 0, data: { messages }, echo: frame.echo }
          : { status: 'failed', retcode: 1404, message: 'forward not found', echo: frame.echo },
      ),
    );
  });
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  return { socket, asked };
}

const node = (userId: number, nickname: string, time: number, message: unknown[]) => ({
  time,
  message_type: 'group',
  sender: { user_id: userId, nickname },
  message,
});

describe('a OneBot merged forward is read with get_forward_msg while its window is open', () => {
  let service: Running;
  let socket: WebSocket | undefined;
  afterEach(async () => {
    socket?.close();
    await service?.stop();
  });

  const start = (clock: ManualClock, forwards: Record<string, unknown> = {}) =>
    startService(
      {
        debounce: { windowMs: 100, maxWaitMs: 300 },
        forwards: { timeoutMs: 1000, ...forwards },
        channels: [{ id: 'qq-ws', adapter: 'onebot', transport: 'ws-reverse', accessToken: 'tok', namespace: 'qq' }],
      },
      { clock },
    );

  it("turns the two nodes of a forward, one holding a nested forward read by its id, into the part's forwarded messages, with the comment after it in one output", async () => {
    const clock = new ManualClock();
    service = await start(clock);
    const image = 'https://192.0.2.1/download?fileid=fwd';
    const connected = await bot(
      service,
      new Map<string, unknown[]>([
        [
          '7394826153467289',
          [
            node(111, 'Ana', 1717990000, [
              { type: 'text', data: { text: 'first' } },
              { type: 'image', data: { file: 'a.png', url: image } },
            ]),
            node(222, 'Bo', 1717990060, [{ type: 'forward', data: { id: 'inner-1' } }]),
          ],
        ],
        ['inner-1', [node(333, 'Cy', 1717980000, [{ type: 'text', data: { text: 'deep' } }])]],
      ]),
    );
    socket = connected.socket;
    const got: ProcessedMessage[] = [];
    service.intake.on('chat.processedMessage', (message) => got.push(message));
    const forward = fixture('onebot', 'forward-group.json');
    const comment = {
      ...forward,
      message_id: -2147480011,
      message: [{ type: 'text', data: { text: 'look at this' } }],
    };
    socket.send(JSON.stringify(forward));
    socket.send(JSON.stringify(comment));
    await until(() => connected.asked.length === 2, 10_000);
    await clock.advance(150);
    await until(() => got.length === 1, 10_000);
    const [output] = got;
    expect(connected.asked).toEqual(['7394826153467289', 'inner-1']);
    expect(output!.content).toBe('[forwarded messages] look at this');
    expect(output!.parts[0]!.forwarded).toEqual([
      {
        sender: { id: '111', name: 'Ana' },
        content: 'first',
        timestamp: 1717990000,
        media: [{ type: 'image', ref: image }],
      },
      { sender: { id: '222', name: 'Bo' }, content: '[forwarded messages]', timestamp: 1717990060, media: [] },
      { sender: { id: '333', name: 'Cy' }, content: 'deep', timestamp: 1717980000, media: [] },
    ]);
    expect(output!.parts[1]!.forwarded).toBeUndefined();
    expect(output!.forwardErrors).toBeUndefined();
  });

  it('keeps within forwards.maxDepth: a nested forward past it is listed in forwardErrors, not read', async () => {
    const clock = new ManualClock();
    service = await start(clock, { maxDepth: 1 });
    const connected = await bot(
      service,
      new Map<string, unknown[]>([
        ['7394826153467289', [node(222, 'Bo', 1717990060, [{ type: 'forward', data: { id: 'inner-1' } }])]],
      ]),
    );
    socket = connected.socket;
    const got: ProcessedMessage[] = [];
    service.intake.on('chat.processedMessage', (message) => got.push(message));
    socket.send(JSON.stringify(fixture('onebot', 'forward-group.json')));
    await until(() => connected.asked.length === 1, 10_000);
    await clock.advance(150);
    await until(() => got.length === 1, 10_000);
    expect(connected.asked).toEqual(['7394826153467289']);
    expect(got[0]!.parts[0]!.forwarded).toHaveLength(1);
    expect(got[0]!.forwardErrors).toEqual([{ id: 'inner-1', reason: expect.stringMatching(/^too_deep:/) }]);
  });

  it('emits the output with forwardErrors when the bot never answers, once forwards.timeoutMs has passed', async () => {
    const clock = new ManualClock();
    service = await start(clock);
    const connected = await bot(service, undefined);
    socket = connected.socket;
    const got: ProcessedMessage[] = [];
    service.intake.on('chat.processedMessage', (message) => got.push(message));
    socket.send(JSON.stringify(fixture('onebot', 'forward-group.json')));
    await until(() => connected.asked.length === 1, 10_000);
    await clock.advance(150);
    // The flush waits for the read, up to its deadline from admission.
    expect(got).toEqual([]);
    await clock.advance(1000);
    await until(() => got.length === 1, 10_000);
    expect(got[0]!.content).toBe('[forwarded messages]');
    expect(got[0]!.parts[0]!.forwarded).toEqual([]);
    expect(got[0]!.forwardErrors).toEqual([
      { id: '7394826153467289', reason: 'timeout: not read within 1000 ms (forwards.timeoutMs)' },
    ]);
  });
});
