import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { outputOf, type Output, type ProcessedMessage } from '../../../src/events/output.js';
import { startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';
import { PNG, serve, type TestServer } from '../../support/servers.js';

/*
 * A Matrix application service end to end: the homeserver PUTs transactions to the channel's
 * webhook URL with its hs_token, and serves authenticated media; both on loopback (no Synapse).
 */
const HS_TOKEN = 'hs-token-e2e';
const AS_TOKEN = 'as-token-e2e';
const BOT = '@intake:example.org';
const ROOM = '!standup:example.org';

let txn = 0;
/** A room event stamped at `ts` (ms). */
const message = (eventId: string, body: string, ts: number, extra: Record<string, unknown> = {}) => ({
  type: 'm.room.message',
  room_id: ROOM,
  sender: '@alice:example.org',
  event_id: eventId,
  origin_server_ts: ts,
  content: { msgtype: 'm.text', body, ...extra },
});

describe('a Matrix application service channel on the real server', () => {
  let service: Running;
  let clock: ManualClock;
  let homeserver: TestServer;
  beforeAll(async () => {
    homeserver = await serve((req, res) => {
      if (
        req.url === '/_matrix/client/v1/media/download/example.org/AbCdEf' &&
        req.headers.authorization === `Bearer ${AS_TOKEN}`
      ) {
        res.setHeader('content-type', 'image/png');
        res.end(PNG);
        return;
      }
      res.statusCode = 401;
      res.setHeader('content-type', 'application/json');
      res.end('{"errcode":"M_MISSING_TOKEN","error":"Missing access token"}');
    });
  });
  afterAll(() => homeserver.close());
  afterEach(async () => service?.stop());

  const start = async (debounce: Record<string, number> = { windowMs: 1000, maxWaitMs: 10_000 }) => {
    clock = new ManualClock();
    service = await startService(
      {
        store: 'memory',
        debounce,
        media: { allowHosts: [`127.0.0.1:${homeserver.port}`], retries: 0 },
        channels: [
          {
            id: 'mx',
            adapter: 'matrix',
            hsToken: HS_TOKEN,
            asToken: AS_TOKEN,
            homeserverUrl: `http://127.0.0.1:${homeserver.port}/`,
            userId: BOT,
          },
        ],
      },
      { clock },
    );
  };
  /** PUT one transaction as the homeserver does; answers status and body. */
  const put = async (
    body: unknown,
    { txnId = `t${++txn}`, auth = `Bearer ${HS_TOKEN}`, query = '' } = {},
  ): Promise<{ status: number; body: any }> => {
    const response = await fetch(`${service.url}/webhooks/mx/_matrix/app/v1/transactions/${txnId}${query}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: await response.json() };
  };
  const outputs = async (): Promise<Output[]> =>
    (await service.intake.store.outboxAfter(0, 100)).map((record) => outputOf(record));
  const ofType = async (type: Output['type']) => (await outputs()).filter((output) => output.type === type);
  const flushed = async (ms = 1100) => {
    await clock.advance(ms);
    await service.intake.settle();
  };

  it('merges three transactions of one sender into one message, answers a retried txnId 200 {} once, and traces the channel', async () => {
    await start();
    const now = clock.now();
    const first = { events: [message('$m1', 'where is', now, { 'm.mentions': { user_ids: [BOT] } })] };
    expect(await put(first, { txnId: 'a1' })).toEqual({ status: 200, body: {} });
    expect(await put({ events: [message('$m2', 'the standup', now + 100)] })).toEqual({ status: 200, body: {} });
    expect(await put({ events: [message('$m3', 'today?', now + 200)] })).toEqual({ status: 200, body: {} });
    expect(await put(first, { txnId: 'a1' })).toEqual({ status: 200, body: {} });
    await flushed();
    const messages = (await ofType('chat.processedMessage')) as ProcessedMessage[];
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({
      sessionKey: `matrix:group:${ROOM}`,
      content: 'where is the standup today?',
      merged: 3,
      messageIds: ['$m1', '$m2', '$m3'],
      sourceChannel: 'matrix',
      channel: 'mx',
      sender: { id: '@alice:example.org' },
      conversation: { type: 'group', id: ROOM },
      mentionedBots: [{ channel: 'mx', botId: BOT }],
      replyBot: { channel: 'mx', botId: BOT },
    });
    const trace = (await (await fetch(`${service.url}/v1/trace/${encodeURIComponent('$m1')}`)).json()) as any;
    expect(trace.arrivals.map((a: any) => [a.id, a.channel, a.verdict])).toEqual([
      ['$m1', 'mx', 'accepted'],
      ['$m2', 'mx', 'accepted'],
      ['$m3', 'mx', 'accepted'],
      ['$m1', 'mx', 'duplicate'],
    ]);
  });

  it('records nothing of a replayed txnId whose body differs: the first transaction wins', async () => {
    await start();
    const now = clock.now();
    expect(await put({ events: [message('$first', 'the first', now)] }, { txnId: 'same' })).toEqual({
      status: 200,
      body: {},
    });
    expect(await put({ events: [message('$other', 'not this one', now)] }, { txnId: 'same' })).toEqual({
      status: 200,
      body: {},
    });
    await flushed();
    expect((await outputs()).map((output) => output.type === 'chat.processedMessage' && output.content)).toEqual([
      'the first',
    ]);
  });

  it('downloads an mxc:// image from the homeserver with the as_token into the media directory', async () => {
    await start();
    const image = {
      ...message('$img', '', clock.now()),
      content: {
        msgtype: 'm.image',
        body: 'the whiteboard',
        filename: 'board.png',
        url: 'mxc://example.org/AbCdEf',
        info: { mimetype: 'image/png', size: PNG.length },
      },
    };
    expect((await put({ events: [image] })).status).toBe(200);
    await flushed();
    await until(async () => (await ofType('chat.processedMessage')).length === 1);
    const [output] = (await ofType('chat.processedMessage')) as ProcessedMessage[];
    expect(output).toMatchObject({ content: 'the whiteboard', mediaErrors: [] });
    expect(output!.media).toMatchObject([{ type: 'image', mime: 'image/png', bytes: PNG.length }]);
    const stored = join(service.dir, output!.media[0]!.path);
    expect(existsSync(stored) && readFileSync(stored).equals(PNG)).toBe(true);
  });

  it('refuses a wrong hs_token with 403 M_FORBIDDEN and a missing one with 401, recording nothing; takes the legacy ?access_token=', async () => {
    await start();
    const body = { events: [message('$tok', 'hello', clock.now())] };
    expect(await put(body, { auth: 'Bearer wrong' })).toMatchObject({
      status: 403,
      body: { errcode: 'M_FORBIDDEN', error: expect.stringContaining('hs_token') },
    });
    expect(await put(body, { auth: '' })).toMatchObject({ status: 401, body: { errcode: 'M_UNAUTHORIZED' } });
    expect(
      await put(body, { auth: `Bearer ${HS_TOKEN}`, query: `?access_token=${encodeURIComponent('other')}` }),
    ).toMatchObject({ status: 403, body: { errcode: 'M_FORBIDDEN' } });
    await flushed();
    expect(await outputs()).toEqual([]);
    expect(service.intake.metrics.channelStats().mx).toEqual({ rejected: 3 });
    expect(await put(body, { auth: '', query: `?access_token=${HS_TOKEN}` })).toEqual({ status: 200, body: {} });
    await flushed();
    expect(await ofType('chat.processedMessage')).toHaveLength(1);
  });

  it('keeps a message redacted inside its window from the agent', async () => {
    await start();
    expect((await put({ events: [message('$oops', 'wrong room, sorry', clock.now())] })).status).toBe(200);
    await clock.advance(300);
    const redaction = {
      type: 'm.room.redaction',
      room_id: ROOM,
      sender: '@alice:example.org',
      event_id: '$redaction',
      origin_server_ts: clock.now(),
      content: { redacts: '$oops' },
    };
    expect(await put({ events: [redaction] })).toEqual({ status: 200, body: {} });
    await flushed(2000);
    expect(await outputs()).toEqual([]);
    const trace = (await (await fetch(`${service.url}/v1/trace/${encodeURIComponent('$oops')}`)).json()) as any;
    expect(trace.arrivals.map((arrival: any) => arrival.verdict)).toContain('retracted');
  });

  it('tells an edit (m.replace) of a message already emitted as chat.edited with the new text', async () => {
    await start();
    expect((await put({ events: [message('$orig', 'standup at ten', clock.now())] })).status).toBe(200);
    await flushed();
    const [emitted] = await ofType('chat.processedMessage');
    expect(emitted).toMatchObject({ messageIds: ['$orig'] });
    const edit = message('$edit', '* standup at eleven', clock.now(), {
      'm.new_content': { msgtype: 'm.text', body: 'standup at eleven' },
      'm.relates_to': { rel_type: 'm.replace', event_id: '$orig' },
    });
    expect(await put({ events: [edit] }, { txnId: 'edit-1' })).toEqual({ status: 200, body: {} });
    // The homeserver retries the transaction: told once.
    expect(await put({ events: [edit] }, { txnId: 'edit-1' })).toEqual({ status: 200, body: {} });
    await flushed(60);
    const edited = await ofType('chat.edited');
    expect(edited).toHaveLength(1);
    expect(edited[0]).toMatchObject({
      type: 'chat.edited',
      sessionKey: `matrix:group:${ROOM}`,
      outputId: emitted!.id,
      messageId: '$orig',
      channel: 'mx',
      content: expect.stringContaining('standup at eleven'),
    });
  });

  it('holds a sender’s open buffer while the homeserver says they are typing; loops our own messages; tells a join as a notice', async () => {
    await start();
    expect((await put({ events: [message('$t1', 'one moment', clock.now())] })).status).toBe(200);
    await clock.advance(900);
    const typing = {
      events: [
        { ...message('$own', 'our own answer', clock.now()), sender: BOT },
        {
          type: 'm.room.member',
          room_id: ROOM,
          sender: '@bob:example.org',
          state_key: '@bob:example.org',
          event_id: '$join',
          origin_server_ts: clock.now(),
          content: { membership: 'join' },
        },
      ],
      'de.sorunome.msc2409.ephemeral': [
        { type: 'm.typing', room_id: ROOM, content: { user_ids: ['@alice:example.org'] } },
      ],
    };
    expect(await put(typing)).toEqual({ status: 200, body: {} });
    // Past the 1 s window, inside the 3 s typing hold.
    await flushed(1000);
    expect(await ofType('chat.processedMessage')).toEqual([]);
    await flushed(2500);
    expect((await ofType('chat.processedMessage')).map((o) => 'content' in o && o.content)).toEqual(['one moment']);
    expect(await ofType('chat.notice')).toMatchObject([
      { detail: 'member', sessionKey: `matrix:group:${ROOM}`, sender: { id: '@bob:example.org' } },
    ]);
    const own = (await (await fetch(`${service.url}/v1/trace/${encodeURIComponent('$own')}`)).json()) as any;
    expect(own.arrivals.map((arrival: any) => arrival.verdict)).toEqual(['looped']);
  });

  it('answers 404 to other paths and methods under the webhook URL, recording nothing', async () => {
    await start();
    const body = JSON.stringify({ events: [message('$elsewhere', 'hello', clock.now())] });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${HS_TOKEN}` };
    for (const [method, path] of [
      ['PUT', '/_matrix/app/v1/users/%40someone%3Aexample.org'],
      ['POST', '/_matrix/app/v1/transactions/p1'],
      ['PUT', '/_matrix/app/v1/transactions/p2/extra'],
    ] as const) {
      const response = await fetch(`${service.url}/webhooks/mx${path}`, { method, headers, body });
      expect(response.status, `${method} ${path}`).toBe(404);
    }
    await flushed();
    expect(await outputs()).toEqual([]);
  });
});
