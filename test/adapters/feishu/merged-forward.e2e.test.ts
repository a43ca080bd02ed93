import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ProcessedMessage } from '../../../src/events/output.js';
import { fixture } from '../../fixtures/index.js';
import { postJson, startService, until, type Running } from '../../support/helpers.js';
import { ManualClock } from '../../support/manual-clock.js';
import { serve, type TestServer } from '../../support/servers.js';

const TOKEN = 'fixture-secret';
const FORWARD = 'om_fwd1';
const MESSAGES = '/open-apis/im/v1/messages/';

/** A child of a merged forward as `GET /open-apis/im/v1/messages/{id}` lists it. */
const child = (id: string, upper: string, sender: string, ms: number, type: string, content: unknown, extra = {}) => ({
  message_id: id,
  upper_message_id: upper,
  msg_type: type,
  create_time: String(ms),
  chat_id: 'oc_p2p1',
  sender: { id: sender, id_type: 'open_id', sender_type: 'user', tenant_key: 'tk1' },
  body: { content: typeof content === 'string' ? content : JSON.stringify(content) },
  ...extra,
});

/** The forward itself, first in `data.items`, then its children and a nested forward's own. */
const ITEMS = [
  {
    message_id: FORWARD,
    msg_type: 'merge_forward',
    create_time: '1718000002000',
    chat_id: 'oc_p2p1',
    sender: { id: 'ou_ana', id_type: 'open_id', sender_type: 'user' },
    body: { content: 'Merged and Forwarded Message' },
  },
  child(
    'om_c1',
    FORWARD,
    'ou_bo',
    1_717_990_000_123,
    'text',
    { text: '@_user_1 first' },
    {
      mentions: [{ key: '@_user_1', id: 'ou_cy', id_type: 'open_id', name: 'Cy' }],
    },
  ),
  child('om_c2', FORWARD, 'ou_cy', 1_717_990_060_000, 'image', { image_key: 'img_v2_k' }),
  child('om_c3', FORWARD, 'ou_bo', 1_717_990_120_000, 'merge_forward', 'Merged and Forwarded Message'),
  child('om_d1', 'om_c3', 'ou_dee', 1_717_980_000_000, 'text', { text: 'deep' }),
];

describe('a Feishu merged forward is read through the API while its window is open', () => {
  let service: Running;
  let api: TestServer;
  let tokens = 0;
  beforeAll(async () => {
    // Feishu's open platform on loopback: the tenant token, the forward's items, and a message it refuses.
    api = await serve((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/open-apis/auth/v3/tenant_access_token/internal') {
        tokens++;
        res.end(JSON.stringify({ code: 0, msg: 'ok', tenant_access_token: `t-${tokens}`, expire: 7200 }));
        return;
      }
      if (req.headers.authorization !== `Bearer t-${tokens}`) {
        res.statusCode = 400;
        res.end('{"code":99991663,"msg":"Invalid access token for authorization."}');
        return;
      }
      if (req.url === `${MESSAGES}${FORWARD}?user_id_type=open_id`) {
        res.end(JSON.stringify({ code: 0, msg: 'success', data: { items: ITEMS } }));
        return;
      }
      res.statusCode = 400;
      res.end('{"code":230110,"msg":"Action unavailable as the message has been deleted."}');
    });
  });
  afterAll(() => api.close());
  afterEach(async () => service?.stop());

  const start = async (credentials: boolean, forwards: Record<string, unknown> = {}) => {
    const clock = new ManualClock();
    service = await startService(
      {
        debounce: { windowMs: 100, maxWaitMs: 300 },
        forwards: { timeoutMs: 1000, ...forwards },
        channels: [
          {
            id: 'fs',
            adapter: 'feishu',
            verificationToken: TOKEN,
            apiBaseUrl: `http://127.0.0.1:${api.port}`,
            ...(credentials ? { appId: 'cli_a1b2c3', appSecret: 'app-secret' } : {}),
          },
        ],
      },
      { clock },
    );
    const got: ProcessedMessage[] = [];
    service.intake.on('chat.processedMessage', (message) => got.push(message));
    return { clock, got };
  };
  /** The fixture's merge_forward under this message id, and a comment from the same sender after it. */
  const send = async (clock: ManualClock, messageId: string) => {
    const forward = fixture('feishu', 'merge-forward.json');
    forward.header.event_id = `ev-${messageId}`;
    forward.event.message.message_id = messageId;
    forward.event.message.create_time = String(clock.now());
    const comment = fixture('feishu', 'text-p2p.json');
    comment.header.event_id = `ev-${messageId}-comment`;
    comment.event.message.create_time = String(clock.now());
    comment.event.message.content = JSON.stringify({ text: 'look at this' });
    expect((await postJson(`${service.url}/webhooks/fs`, forward)).status).toBe(200);
    expect((await postJson(`${service.url}/webhooks/fs`, comment)).status).toBe(200);
  };

  it("lists the forward's children in order, with their senders, text, media and time, a nested forward's right after the child holding it, in one output with the comment", async () => {
    const { clock, got } = await start(true);
    await send(clock, FORWARD);
    await api.arrived(`${MESSAGES}${FORWARD}`);
    await clock.advance(150);
    await until(() => got.length === 1);
    const [output] = got;
    expect(output!.content).toBe('[merge_forward] look at this');
    expect(output!.parts[0]!.forwarded).toEqual([
      { sender: { id: 'ou_bo' }, content: '@Cy first', timestamp: 1_717_990_000, media: [] },
      {
        sender: { id: 'ou_cy' },
        content: '',
        timestamp: 1_717_990_060,
        media: [{ type: 'image', ref: 'image:om_c2:img_v2_k' }],
      },
      { sender: { id: 'ou_bo' }, content: '[merge_forward]', timestamp: 1_717_990_120, media: [] },
      { sender: { id: 'ou_dee' }, content: 'deep', timestamp: 1_717_980_000, media: [] },
    ]);
    expect(output!.parts[1]!.forwarded).toBeUndefined();
    expect(output!.forwardErrors).toBeUndefined();
    // One GET: the nested forward's children came in the same answer.
    expect(api.hits.get(`${MESSAGES}${FORWARD}`)).toBe(1);
  });

  it('keeps within forwards.maxDepth: the nested forward is listed, its children are a too_deep entry', async () => {
    const { clock, got } = await start(true, { maxDepth: 1 });
    await send(clock, FORWARD);
    await api.arrived(`${MESSAGES}${FORWARD}`);
    await clock.advance(150);
    await until(() => got.length === 1);
    expect(got[0]!.parts[0]!.forwarded!.map((message) => message.content)).toEqual([
      '@Cy first',
      '',
      '[merge_forward]',
    ]);
    expect(got[0]!.forwardErrors).toEqual([{ id: 'om_c3', reason: 'too_deep: nested past 1 (forwards.maxDepth)' }]);
  });

  it('sends the output with a forwardErrors entry in Feishu words when the API refuses the forward', async () => {
    const { clock, got } = await start(true);
    await send(clock, 'om_gone');
    await api.arrived(`${MESSAGES}om_gone`);
    await clock.advance(150);
    await until(() => got.length === 1);
    expect(got[0]!.content).toBe('[merge_forward] look at this');
    expect(got[0]!.parts[0]!.forwarded).toEqual([]);
    expect(got[0]!.forwardErrors).toEqual([
      {
        id: 'om_gone',
        reason: `GET ${MESSAGES}om_gone answered code 230110 (Action unavailable as the message has been deleted.)`,
      },
    ]);
  });

  it('without appId and appSecret marks the forward and leaves it empty, asking the API nothing', async () => {
    const before = api.total();
    const { clock, got } = await start(false);
    await send(clock, FORWARD);
    await clock.advance(150);
    await until(() => got.length === 1);
    expect(got[0]!.parts[0]!.forwarded).toEqual([]);
    expect(got[0]!.forwardErrors).toBeUndefined();
    expect(api.total()).toBe(before);
  });
});
