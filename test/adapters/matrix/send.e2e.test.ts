import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { postJson, startService, type Running } from '../../support/helpers.js';
import { serve, type TestServer } from '../../support/servers.js';

/* An agent answering through a Matrix channel: `send` is a PUT to the homeserver as the bot. */
const AS_TOKEN = 'as-token-send';
const BOT = '@intake:example.org';
const ROOM = '!standup:example.org';

describe('actions on a Matrix channel', () => {
  let service: Running;
  let homeserver: TestServer;
  const requests: Array<{ method: string; url: string; authorization: string | undefined; body: unknown }> = [];
  beforeAll(async () => {
    homeserver = await serve((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      req.on('end', () => {
        requests.push({
          method: req.method ?? '',
          url: req.url ?? '',
          authorization: req.headers.authorization,
          body: JSON.parse(text || 'null'),
        });
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ event_id: '$sent1' }));
      });
    });
  });
  afterAll(() => homeserver.close());
  afterEach(async () => service?.stop());

  const start = async () => {
    requests.length = 0;
    service = await startService({
      store: 'memory',
      channels: [
        {
          id: 'mx',
          adapter: 'matrix',
          hsToken: 'hs-token-send',
          asToken: AS_TOKEN,
          homeserverUrl: `http://127.0.0.1:${homeserver.port}`,
          userId: BOT,
        },
      ],
    });
  };

  it('sends a reply into the room with the as_token, under the txn_id given, and answers the event id', async () => {
    await start();
    const answer = await postJson(`${service.url}/v1/channels/mx/actions/send`, {
      room_id: ROOM,
      body: 'the standup is at ten',
      reply_to: '$question',
      txn_id: 'answer-1',
    });
    expect(answer).toMatchObject({ status: 200, body: { event_id: '$sent1' } });
    expect(requests).toEqual([
      {
        method: 'PUT',
        url: `/_matrix/client/v3/rooms/${encodeURIComponent(ROOM)}/send/m.room.message/answer-1`,
        authorization: `Bearer ${AS_TOKEN}`,
        body: {
          msgtype: 'm.text',
          body: 'the standup is at ten',
          'm.relates_to': { 'm.in_reply_to': { event_id: '$question' } },
        },
      },
    ]);
  });

  it('refuses an action other than send, or a send without a room, with 400 bad_action and sends nothing', async () => {
    await start();
    const other = await postJson(`${service.url}/v1/channels/mx/actions/redact`, { room_id: ROOM });
    expect(other).toMatchObject({ status: 400, body: { error: { code: 'bad_action' } } });
    const roomless = await postJson(`${service.url}/v1/channels/mx/actions/send`, { body: 'hi' });
    expect(roomless).toMatchObject({
      status: 400,
      body: { error: { code: 'bad_action', message: expect.stringContaining('room_id and body are required') } },
    });
    expect(requests).toEqual([]);
  });
});
