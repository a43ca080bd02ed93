import { afterEach, describe, expect, it } from 'vitest';
import type { ProcessedMessage as Output } from '../../../src/events/output.js';
import { startService, until, type Running } from '../../support/helpers.js';
import { recordingLogger } from '../../support/logger.js';
import { ManualClock } from '../../support/manual-clock.js';
import { fakeSatori, LOGIN, satoriMessage, TOKEN } from './fake-satori.js';

const WINDOW_MS = 100;

describe('the Satori event socket: IDENTIFY, PING, resume and refusals', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const start = async (token = TOKEN) => {
    const satori = await fakeSatori();
    cleanups.push(() => satori.close());
    const clock = new ManualClock();
    const { logger, lines } = recordingLogger('info');
    const service: Running = await startService(
      {
        store: 'memory',
        debounce: { windowMs: WINDOW_MS, maxWaitMs: 400 },
        channels: [
          {
            id: 'sat',
            adapter: 'satori',
            url: satori.url,
            token,
            namespaces: { onebot: 'qq' },
            reconnectMinMs: 1000,
            reconnectMaxMs: 8000,
          },
        ],
      },
      { clock, logger },
    );
    cleanups.push(() => service.stop());
    const outputs: Output[] = [];
    service.intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    const received = () => service.intake.metrics.channelStats().sat?.received ?? 0;
    /** Messages in their own conversations (one output each), once the pipeline counted them. */
    const send = async (id: string, frameSn?: number) => {
      const before = received();
      satori.event(satoriMessage(id, `message ${id}`, { user: `7${id}`, direct: true }), frameSn);
      await until(() => received() > before);
    };
    const emitted = async (count: number) => {
      await until(async () => {
        await clock.advance(WINDOW_MS);
        return outputs.length >= count;
      });
      return outputs.flatMap((output) => output.messageIds).map((id) => id.split(':').at(-1));
    };
    return { satori, clock, service, outputs, lines, send, emitted };
  };

  it('PINGs every 10 s on the clock, and dials again when a PING goes unanswered', async () => {
    const { satori, clock, service } = await start();
    // READY read: the PINGs count from it.
    await until(async () => (await service.intake.connections()).some((view) => view.botId === LOGIN.user.id));
    await clock.advance(9_999);
    expect(satori.state.pings).toBe(0);
    await clock.advance(1);
    await until(() => satori.state.pings === 1);
    await clock.advance(10_000);
    await until(() => satori.state.pings === 2);
    satori.state.pong = false;
    await clock.advance(10_000);
    await until(() => satori.state.pings === 3);
    satori.state.pong = true;
    // The third PING got no PONG by the fourth's time: the socket is closed and dialled again.
    await clock.advance(10_000);
    await until(async () => {
      await clock.advance(500);
      return satori.state.connections === 2 && satori.open() === 1;
    });
  });

  it('resumes after the server drops the socket: what was sent meanwhile comes after IDENTIFY with the kept sn, nothing lost, nothing twice', async () => {
    const { satori, clock, send, emitted } = await start();
    await until(() => satori.open() === 1);
    await send('1');
    await send('2');
    expect(await emitted(2)).toEqual(['1', '2']);
    satori.drop();
    await until(() => satori.open() === 0);
    // Sent while no socket is open: the server keeps them for the resume.
    satori.event(satoriMessage('3', 'message 3', { user: '73', direct: true }));
    satori.event(satoriMessage('4', 'message 4', { user: '74', direct: true }));
    await until(async () => {
      await clock.advance(500);
      return satori.open() === 1;
    });
    expect(satori.identifies.map((identify) => identify.sn)).toEqual([undefined, 2]);
    expect(await emitted(4)).toEqual(['1', '2', '3', '4']);
    // An event the server sends again at or below the kept sn is passed over.
    await send('5');
    satori.event(satoriMessage('2', 'message 2', { user: '72', direct: true }), 2);
    await send('6');
    expect(await emitted(6)).toEqual(['1', '2', '3', '4', '5', '6']);
    await clock.advance(WINDOW_MS * 5);
    expect(await emitted(6)).toHaveLength(6);
  });

  it('follows a server that numbers its events from 1 again after a restart', async () => {
    const { satori, clock, send, emitted, lines } = await start();
    await until(() => satori.open() === 1);
    await send('a', 40);
    await send('b', 41);
    expect(await emitted(2)).toEqual(['a', 'b']);
    satori.drop();
    await until(async () => {
      await clock.advance(500);
      return satori.identifies.length === 2 && satori.open() === 1;
    });
    await send('c', 1);
    await send('d', 2);
    expect(await emitted(4)).toEqual(['a', 'b', 'c', 'd']);
    expect(lines.some((line) => /numbers its events from the start again/.test(line.msg))).toBe(true);
  });

  it('logs a refused token (close 4004) once as an error and backs off, without a loop', async () => {
    const { satori, clock, lines } = await start('wrong-token');
    await until(() => satori.identifies.length === 1);
    await until(() => lines.some((line) => /refused our token \(close 4004/.test(line.msg)));
    expect(lines.find((line) => /refused our token/.test(line.msg))).toMatchObject({ level: 50, channel: 'sat' });
    // Nothing is dialled while the clock stands still; each next attempt waits longer.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(satori.identifies).toHaveLength(1);
    let waited = 0;
    const waits: number[] = [];
    for (let attempt = 2; attempt <= 4; attempt++) {
      let spent = 0;
      await until(async () => {
        await clock.advance(250);
        spent += 250;
        return satori.identifies.length === attempt;
      }, 10_000);
      waits.push(spent);
      waited += spent;
    }
    expect(waits[2]!).toBeGreaterThan(waits[0]!);
    expect(waited).toBeGreaterThan(3000);
    expect(lines.filter((line) => /refused our token/.test(line.msg) && line.level === 50)).toHaveLength(1);
  });

  it('takes the logins READY and login events announce as the bots actions go through', async () => {
    const { satori, service, send } = await start();
    await until(() => satori.open() === 1);
    await send('x');
    satori.event({
      type: 'login-added',
      timestamp: Date.now(),
      login: { sn: 2, status: 1, platform: 'discord', user: { id: 'd-1' } },
    });
    await until(() => (service.intake.metrics.channelStats().sat?.ignored ?? 0) >= 1);
    const answer = async (self: string) =>
      (
        await fetch(`${service.url}/v1/channels/sat/actions/message.create?self_id=${self}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ channel_id: 'c', content: 'x' }),
        })
      ).status;
    expect(await answer('d-1')).toBe(200);
    expect(satori.calls.at(-1)?.headers).toMatchObject({ 'satori-platform': 'discord', 'satori-user-id': 'd-1' });
    expect(await answer(LOGIN.user.id)).toBe(200);
    expect(satori.calls.at(-1)?.headers).toMatchObject({ 'satori-platform': 'onebot' });
    expect(await answer('nobody')).toBe(404);
  });
});
