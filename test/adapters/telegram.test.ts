import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fixtureBytes } from '../fixtures/index.js';
import { postJson, readEvents, startService, until, type Running } from '../helpers.js';
import { ManualClock } from '../manual-clock.js';
import { PNG, serve, type TestServer } from '../servers.js';

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
        res.end(JSON.stringify({ ok: true, result: { file_id: id, file_size: PNG.length, file_path: `photos/${id}.jpg` } }));
        return;
      }
      if (url.pathname.startsWith(`/file/bot${TOKEN}/photos/`)) { res.end(PNG); return; }
      res.statusCode = 404; res.end('{"ok":false,"description":"Not Found"}');
    });
  });
  afterAll(() => api.close());
  afterEach(async () => service?.stop());

  const start = (clock?: ManualClock) => startService({
    debounce: { windowMs: 150, maxWaitMs: 600, maxMessages: 3 },
    media: { allowHosts: [`127.0.0.1:${api.port}`], maxBytes: 100 * 1024 * 1024 },
    channels: [{ id: 'tg', adapter: 'telegram', secretToken: 'tg_secret-1', botToken: TOKEN, apiBaseUrl: `http://127.0.0.1:${api.port}` }],
  }, clock ? { clock } : {});
  const post = (name: string, token: string | null = 'tg_secret-1') =>
    postJson(`${service.url}/webhooks/tg`, fixtureBytes('telegram', name).toString(), token === null ? {} : { 'x-telegram-bot-api-secret-token': token });

  it('refuses a wrong, short or missing secret token with 401', async () => {
    service = await start();
    for (const token of ['tg_secret-2', 'tg', null]) expect((await post('text.json', token)).status).toBe(401);
  });

  it('maps private and group chats to sessions, counts a retried update once, and ignores other updates', async () => {
    service = await start();
    const got: Array<{ key: string; content: string; sender?: string }> = [];
    service.intake.on('chat.processedMessage', (m) => { got.push({ key: m.sessionKey, content: m.content, sender: m.sender.name }); });
    await post('text.json');
    expect((await post('text.json')).body.events[0].verdict).toBe('duplicate');
    await post('group.json');
    expect((await post('member.json')).body).toEqual({ accepted: 0, duplicates: 0, events: [] });
    await until(() => got.length === 2);
    expect(got).toEqual(expect.arrayContaining([{ key: 'tg:111', content: 'hi', sender: 'Ana' }, { key: 'tg:group:-100123', content: '@intake_bot status?', sender: 'Bo Li' }]));
  });

  it('marks an edit as an edit and turns a button press into a message with its data', async () => {
    service = await start();
    const got: string[] = [];
    service.intake.on('chat.processedMessage', (m) => { got.push(m.content); });
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
    expect(frame?.data.mediaErrors).toEqual([{ url: 'tg:vid-1', reason: 'too_large: 52428800 bytes: the Telegram Bot API serves files up to 20 MB' }]);
    expect(api.hits.get(`/bot${TOKEN}/getFile`) ?? 0).toBe(before);
    expect(JSON.stringify(frame?.data)).not.toContain(TOKEN);
  });
});
