import type { WebSocket } from 'ws';
import { describe, expect, it } from 'vitest';
import { Calls } from '../../src/connections/calls.js';
import type { ConnectionView } from '../../src/events/connection.js';
import { ManualClock } from '../support/manual-clock.js';

/** A socket that records what is sent on it. */
const socket = () => {
  const sent: Array<{ echo: string }> = [];
  return {
    sent,
    socket: { bufferedAmount: 0, send: (text: string) => void sent.push(JSON.parse(text)) } as unknown as WebSocket,
  };
};
const view = { channel: 'qq', botId: '10001' } as ConnectionView;

describe('Calls on the injected clock', () => {
  it("answers action_timeout when the clock passes the action's timeout, and ignores the late answer", async () => {
    const clock = new ManualClock();
    const calls = new Calls('i1', clock);
    const bot = socket();
    const answer = calls.send(bot.socket, view, 'get_status', {}, 5000);
    let settled = false;
    answer
      .catch(() => undefined)
      .finally(() => {
        settled = true;
      });
    clock.tick(4999);
    await clock.settle();
    expect(settled).toBe(false);
    clock.tick(1);
    await expect(answer).rejects.toMatchObject({
      code: 'action_timeout',
      message: 'Bot 10001 on channel "qq" did not answer "get_status" within 5000 ms',
    });
    calls.answered(bot.socket, bot.sent[0]!.echo, { status: 'ok' });
    expect(clock.pending()).toEqual([]);
  });

  it('resolves an answer that comes in time and leaves no timer behind', async () => {
    const clock = new ManualClock();
    const calls = new Calls('i1', clock);
    const bot = socket();
    const answer = calls.send(bot.socket, view, 'get_status', {}, 5000);
    expect(clock.pending()).toEqual([5000]);
    calls.answered(bot.socket, bot.sent[0]!.echo, { status: 'ok' });
    await expect(answer).resolves.toEqual({ status: 'ok' });
    expect(clock.pending()).toEqual([]);
  });
});
