import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fixtureBytes } from '../../fixtures/index.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { readEvents } from '../../support/sse.js';
import { ManualClock } from '../../support/manual-clock.js';
import { PNG, serve, type TestServer } from '../../support/servers.js';

const TOKEN = '123456:ABC-DEF';

describe('Telegram channel', () => {
  let service: Running;
  let api: TestServer;
  beforeAll(async () => {
    api = await serve((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === `/bot${TOKEN}/getFile`) {
        const id = url.searchParams.get('file_id');
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({ ok: true, result: { file_id: id, file_size: PNG.length, file_path: `photos/${id}.jpg` } }),
        );
        return;
      }
      if (url.pathname.startsWith(`/file/bot${TOKEN}/photos/`)) {
        res.end(PNG);
        return;
      }
      res.statusCode = 404;
      res.end('{"ok":false,"description":"Not Found"}');
    });
  });
  afterAll(() => api.close());
  afterEach(async () => service?.stop());

  const start = (clock?: ManualClock) =>
    startService(
      {
        debounce: { windowMs: 150, maxWaitMs: 600, maxMessages: 3 },
        media: { allowHosts: [`127.0.0.1:${api.port}`], maxBytes: 100 * 1024 * 1024 },
        channels: [
          {
            id: 'tg',
            adapter: 'telegram',
            secretToken: 'tg_secret-1',
            botToken: TOKEN,
            apiBaseUrl: `http://127.0.0.1:${api.port}`,
          },
        ],
      },
      clock ? { clock } : {},
    );
  const post = (name: string, token: string | null = 'tg_secret-1') =>
    postJson(
      `${service.url}/webhooks/tg`,
      fixtureBytes('telegram', name).toString(),
      token === null ? {} : { 'x-telegram-bot-api-secret-token': token },
    );

  it('refuses a wrong, short or missing secret token with 401', async () => {
    service = await start();
    for (const token of ['tg_secret-2', 'tg', null]) expect((await post('text.json', token)).status).toBe(401);
  });

  it('maps private and group chats to sessions, counts a retried update once, and ignores other updates', async () => {
    service = await start();
    const got: Array<{ key: string; content: string; sender?: string }> = [];
    service.intake.on('chat.processedMessage', (m) => {
      got.push({ key: m.sessionKey, content: m.content, sender: m.sender.name });
    });
    await post('text.json');
    expect((await post('text.json')).body.events[0].verdict).toBe('duplicate');
    await post('group.json');
    expect((await post('member.json')).body).toEqual({ accepted: 0, duplicates: 0, events: [] });
    await until(() => got.length === 2);
    expect(got).toEqual(
      expect.arrayContaining([
        { key: 'tg:111', content: 'hi', sender: 'Ana' },
        { key: 'tg:group:-100123', content: '@intake_bot status?', sender: 'Bo Li' },
      ]),
    );
  });

  it('maps an @username mention of our bot (text or caption, any case) and a text_mention to mentionedBots', async () => {
    service = await startService({
      debounce: { windowMs: 150, maxWaitMs: 600, maxMessages: 3 },
      channels: [
        {
          id: 'tg',
          adapter: 'telegram',
          secretToken: 'tg_secret-1',
          botToken: TOKEN,
          botUsername: '@Intake_Bot',
          apiBaseUrl: `http://127.0.0.1:${api.port}`,
        },
      ],
    });
    const got: Array<{ content: string; mentioned: string[] }> = [];
    service.intake.on('chat.processedMessage', (m) => {
      got.push({ content: m.content, mentioned: m.mentionedBots.map((bot) => `${bot.channel}/${bot.botId}`) });
    });
    const chat = { id: -100777, title: 'Team', type: 'supergroup' };
    const send = (update: Record<string, unknown>) =>
      postJson(`${service.url}/webhooks/tg`, update, { 'x-telegram-bot-api-secret-token': 'tg_secret-1' });
    // A photo whose caption mentions the bot: Telegram puts the offsets in caption_entities.
    await send({
      update_id: 501,
      message: {
        message_id: 1,
        from: { id: 9, first_name: 'Ana' },
        chat,
        date: 1441645533,
        photo: [],
        caption: 'look @INTAKE_bot',
        caption_entities: [{ offset: 5, length: 11, type: 'mention' }],
      },
    });
    await send({
      update_id: 502,
      message: {
        message_id: 2,
        from: { id: 10, first_name: 'Bo' },
        chat: { ...chat, id: -100778 },
        date: 1441645533,
        text: '@someone_else hi',
        entities: [{ offset: 0, length: 13, type: 'mention' }],
      },
    });
    await send({
      update_id: 503,
      message: {
        message_id: 3,
        from: { id: 11, first_name: 'Cy' },
        chat: { ...chat, id: -100779 },
        date: 1441645533,
        text: 'Intake help',
        entities: [
          { offset: 0, length: 6, type: 'text_mention', user: { id: 123456, is_bot: true, first_name: 'Intake' } },
        ],
      },
    });
    await until(() => got.length === 3);
    expect(got).toEqual(
      expect.arrayContaining([
        { content: 'look @INTAKE_bot', mentioned: ['tg/123456'] },
        { content: '@someone_else hi', mentioned: [] },
        { content: 'Intake help', mentioned: ['tg/123456'] },
      ]),
    );
  });

  it('refuses a botUsername that is not a username, naming the setting', async () => {
    await expect(
      startService({
        channels: [{ id: 'tg', adapter: 'telegram', secretToken: 'tg_secret-1', botUsername: 'not a name!' }],
      }),
    ).rejects.toThrow(/botUsername.*username/);
  });

  it('marks an edit as an edit and turns a button press into a message with its data', async () => {
    service = await start();
    const got: string[] = [];
    service.intake.on('chat.processedMessage', (m) => {
      got.push(m.content);
    });
    await post('edited.json');
    await post('callback.json');
    await until(() => got.length === 1);
    expect(got).toEqual(['(edited) hi there choice:2']);
  });

  it('merges an album into one message with every photo at its largest size', async () => {
    // The window closes when the test says: a loaded machine cannot split the album.
    const clock = new ManualClock();
    service = await start(clock);
    const frames = readEvents(`${service.url}/v1/events`, 1, {
      onOpen: async () => {
        for (const i of [1, 2, 3, 4]) await post(`album-${i}.json`);
        await clock.advance(150);
      },
    });
    const [frame] = await frames;
    expect(frame?.data).toMatchObject({ content: 'our trip', merged: 4 });
    expect(frame?.data.media).toHaveLength(4);
    expect(frame?.data.mediaErrors).toEqual([]);
    expect(api.hits.get(`/bot${TOKEN}/getFile`)).toBe(4);
    for (const i of [1, 2, 3, 4]) expect(api.hits.get(`/file/bot${TOKEN}/photos/big-${i}.jpg`)).toBe(1);
  });

  it('explains the Bot API 20 MB limit as a media error without leaking the token', async () => {
    service = await start();
    const before = api.hits.get(`/bot${TOKEN}/getFile`) ?? 0;
    const frames = readEvents(`${service.url}/v1/events`, 1, { onOpen: () => post('huge-video.json') });
    const [frame] = await frames;
    expect(frame?.data.mediaErrors).toEqual([
      { url: 'tg:vid-1', reason: 'too_large: 52428800 bytes: the Telegram Bot API serves files up to 20 MB' },
    ]);
    expect(api.hits.get(`/bot${TOKEN}/getFile`) ?? 0).toBe(before);
    expect(JSON.stringify(frame?.data)).not.toContain(TOKEN);
  });
});
