import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProcessedMessage as Output } from '../../../src/events/output.js';
import { createIntake, type Intake } from '../../../src/service/intake.js';
import { tempDir, until } from '../../support/helpers.js';
import { recordingLogger, silent } from '../../support/logger.js';
import { ManualClock } from '../../support/manual-clock.js';
import { PNG, serve } from '../../support/servers.js';
import { BOT_TOKEN, BOT_USER, fakeGateway } from '../../connections/fake-gateway.js';

describe('Discord over the Gateway (adapter "discord")', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const start = async (
    gatewayUrl: string,
    extra: Record<string, unknown> = {},
    options: {
      clock?: ManualClock;
      logs?: ReturnType<typeof recordingLogger>;
      allowHosts?: string[];
      debounce?: { windowMs: number; maxWaitMs: number };
    } = {},
  ): Promise<{ intake: Intake; outputs: Output[]; dir: string }> => {
    const dir = tempDir().path;
    const intake = await createIntake({
      logger: options.logs?.logger ?? silent,
      cwd: dir,
      ...(options.clock ? { clock: options.clock } : {}),
      configFile: {
        store: 'memory',
        logLevel: 'silent',
        media: { dir: 'media', allowHosts: options.allowHosts ?? [] },
        debounce: options.debounce ?? { windowMs: 50, maxWaitMs: 200 },
        channels: [
          {
            id: 'dc',
            adapter: 'discord',
            botToken: BOT_TOKEN,
            gatewayUrl,
            reconnectMinMs: 20,
            reconnectMaxMs: 100,
            ...extra,
          },
        ],
      },
    });
    cleanups.push(() => intake.close());
    const outputs: Output[] = [];
    intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    return { intake, outputs, dir };
  };

  it('identifies, reads guild and DM messages (fragments merged, our bot mentioned, its own messages looped, attachments downloaded), and shows the connection', async () => {
    const gateway = await fakeGateway();
    cleanups.push(() => gateway.close());
    const files = await serve((_req, res) => {
      res.setHeader('content-type', 'image/png');
      res.end(PNG);
    });
    cleanups.push(() => files.close());
    // Frames 1 and 2 merge only within one window of the real clock the gateway's timers need: a wide one.
    const { intake, outputs, dir } = await start(
      gateway.url,
      {},
      { allowHosts: [`127.0.0.1:${files.port}`], debounce: { windowMs: 500, maxWaitMs: 2000 } },
    );
    await until(() => gateway.identifies() === 1 && gateway.open() === 1);
    expect(gateway.received.find((f) => f.op === 2)?.d).toMatchObject({
      token: BOT_TOKEN,
      intents: (1 << 0) | (1 << 9) | (1 << 11) | (1 << 12) | (1 << 14) | (1 << 15),
    });
    expect(gateway.state.paths[0]).toBe('/?v=10&encoding=json');
    await until(async () => (await intake.connections()).some((c) => c.botId === BOT_USER && c.state === 'open'));
    expect((await intake.connections())[0]).toMatchObject({
      channel: 'dc',
      adapter: 'discord',
      transport: 'gateway',
      botId: BOT_USER,
    });

    gateway.dispatch({
      id: '1',
      content: `<@${BOT_USER}> status of`,
      mentions: [{ id: BOT_USER, username: 'intake', bot: true }],
    });
    gateway.dispatch({ id: '2', content: 'ORD-123?' });
    gateway.dispatch({ id: '3', content: 'my own answer', author: { id: BOT_USER, username: 'intake', bot: true } });
    gateway.dispatch({
      id: '4',
      guild_id: undefined,
      channel_id: '900',
      content: 'look',
      author: { id: '77', username: 'bo' },
      attachments: [
        {
          id: 'a',
          filename: 'shot.png',
          size: PNG.length,
          content_type: 'image/png',
          url: `http://127.0.0.1:${files.port}/shot.png`,
        },
      ],
    });
    await until(() => outputs.length === 2);
    const group = outputs.find((o) => o.sessionKey === 'discord:group:1170000000000000001')!;
    expect(group).toMatchObject({
      content: '@intake status of ORD-123?',
      merged: 2,
      messageIds: ['1', '2'],
      mentionedBots: [{ channel: 'dc', botId: BOT_USER }],
      replyBot: { channel: 'dc', botId: BOT_USER },
    });
    const dm = outputs.find((o) => o.sessionKey === 'discord:900')!;
    expect(dm).toMatchObject({ content: 'look', conversation: { type: 'private', id: '900' }, mediaErrors: [] });
    expect(readFileSync(join(dir, dm.media[0]!.path)).equals(PNG)).toBe(true);
    expect(intake.metrics.channelStats().dc).toMatchObject({ received: 4, looped: 1 });
    expect(existsSync(join(dir, 'media'))).toBe(true);
  });

  it('takes a zombie connection (no heartbeat ACK) down and resumes it: the replayed events are not emitted twice', async () => {
    const gateway = await fakeGateway({ heartbeatMs: 150 });
    cleanups.push(() => gateway.close());
    const { outputs } = await start(gateway.url);
    await until(() => gateway.identifies() === 1 && gateway.open() === 1);
    gateway.dispatch({ id: '10', channel_id: '1', content: 'first' });
    gateway.dispatch({ id: '11', channel_id: '2', content: 'second' });
    await until(() => outputs.length === 2);
    gateway.state.ack = false;
    await until(() => gateway.resumes().length === 1, 10_000);
    const [resume] = gateway.resumes();
    expect(resume?.d).toMatchObject({ token: BOT_TOKEN, session_id: 'session-1' });
    expect(resume?.d.seq).toBeGreaterThanOrEqual(3);
    expect(gateway.state.paths.at(-1)).toBe('/resume/?v=10&encoding=json');
    gateway.state.ack = true;
    // The Gateway replays what came after the seq we said (nothing new here), then a new message.
    gateway.dispatch({ id: '12', channel_id: '3', content: 'third' });
    await until(() => outputs.length === 3);
    expect(outputs.map((o) => o.content)).toEqual(['first', 'second', 'third']);
    expect(gateway.identifies()).toBe(1);
  });

  it('resumes after op 7; dispatches replayed on a resume are claimed as duplicates, never emitted twice', async () => {
    const gateway = await fakeGateway();
    cleanups.push(() => gateway.close());
    const { intake, outputs } = await start(gateway.url);
    await until(() => gateway.identifies() === 1 && gateway.open() === 1);
    gateway.dispatch({ id: '20', channel_id: '1', content: 'one' });
    gateway.dispatch({ id: '21', channel_id: '2', content: 'two' });
    await until(() => outputs.length === 2);
    // The Gateway asks us to reconnect (op 7): we resume, and this time it replays everything.
    gateway.state.replayAll = true;
    gateway.op({ op: 7, d: null });
    await until(() => gateway.resumes().length === 1);
    await until(() => (intake.metrics.channelStats().dc?.deduped ?? 0) === 2);
    gateway.dispatch({ id: '22', channel_id: '3', content: 'three' });
    await until(() => outputs.length === 3);
    expect(outputs.map((o) => o.content)).toEqual(['one', 'two', 'three']);
    expect(gateway.identifies()).toBe(1);
  });

  it('identifies anew after 4009 and an invalid session, spacing identifies by 5 s, and stops for good on 4004', async () => {
    const gateway = await fakeGateway();
    cleanups.push(() => gateway.close());
    const clock = new ManualClock();
    const logs = recordingLogger('warn');
    await start(gateway.url, {}, { clock, logs });
    await until(() => gateway.identifies() === 1);
    gateway.closeNewest(4009, 'Session timed out');
    // Reconnect backoff, then a Hello; the Identify waits out the 5 s spacing on the clock.
    await until(async () => {
      await clock.advance(200);
      return gateway.open() === 1 && gateway.identifies() === 2;
    }, 10_000);
    expect(gateway.resumes()).toEqual([]);
    gateway.op({ op: 9, d: false });
    await until(async () => {
      await clock.advance(200);
      return gateway.identifies() === 3;
    }, 10_000);
    expect(gateway.resumes()).toEqual([]);
    gateway.closeNewest(4004, 'Authentication failed.');
    await until(() =>
      logs.lines.some((line) =>
        line.msg.includes('Discord refused the botToken (4004 authentication failed); not reconnecting'),
      ),
    );
    const opened = gateway.state.paths.length;
    for (let i = 0; i < 10; i++) await clock.advance(200);
    expect(gateway.state.paths.length).toBe(opened);
  });

  it('reconnects when no Hello comes, and survives malformed frames', async () => {
    const gateway = await fakeGateway({ hello: false });
    cleanups.push(() => gateway.close());
    const { outputs } = await start(gateway.url, { helloTimeoutMs: 150 });
    await until(() => gateway.state.paths.length >= 2, 10_000);
    gateway.state.hello = true;
    await until(() => gateway.identifies() === 1, 10_000);
    gateway.raw('not json at all');
    gateway.raw('{"op":0,"s":99,"t":"MESSAGE_CREATE","d":{"id":5}}');
    gateway.dispatch({ id: '30', channel_id: '1', content: 'after the noise' });
    await until(() => outputs.length === 1);
    expect(outputs[0]?.content).toBe('after the noise');
  });

  it('warns once when guild messages keep arriving without content (the Message Content intent)', async () => {
    const gateway = await fakeGateway();
    cleanups.push(() => gateway.close());
    const logs = recordingLogger('warn');
    await start(gateway.url, {}, { logs });
    await until(() => gateway.identifies() === 1 && gateway.open() === 1);
    for (const id of ['40', '41', '42', '43']) gateway.dispatch({ id, channel_id: id, content: '' });
    await until(() => logs.lines.some((line) => line.msg.includes('turn on Message Content Intent')));
    expect(logs.lines.filter((line) => line.msg.includes('turn on Message Content Intent'))).toHaveLength(1);
  });

  it('refuses a webhook POST on the channel and a start without botToken', async () => {
    const gateway = await fakeGateway();
    cleanups.push(() => gateway.close());
    const { intake } = await start(gateway.url);
    await expect(
      intake.ingest('dc', { headers: {}, body: Buffer.from('{}'), query: new URLSearchParams(), now: Date.now() }),
    ).rejects.toMatchObject({ status: 401 });
    await expect(
      createIntake({ logger: silent, configFile: { store: 'memory', channels: [{ id: 'dc', adapter: 'discord' }] } }),
    ).rejects.toThrow(/channels\[0\]\.botToken .*connects to the Gateway with it/);
  });
});
