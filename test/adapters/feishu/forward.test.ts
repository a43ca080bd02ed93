import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localContext } from '../../../src/adapters/kit/access-token.js';
import { feishuForwardNodes } from '../../../src/adapters/feishu/forward.js';
import { createAdapter, type Adapter } from '../../../src/adapters/index.js';
import { loadConfig } from '../../../src/service/configure.js';
import { fixtureBytes } from '../../fixtures/index.js';
import { serve, type TestServer } from '../../support/servers.js';
import { ingest } from '../wx-kit.js';

const NOW = 1_718_000_000_000;
const adapterFor = (settings: Record<string, unknown>): Adapter =>
  createAdapter(
    loadConfig({
      env: {},
      file: { channels: [{ id: 'fs', adapter: 'feishu', verificationToken: 'vt', appId: 'cli_a1b2c3', ...settings }] },
    }).channels[0]!,
    undefined,
    localContext(() => NOW),
  );

/** An item of `data.items`: a message under `upper`, sent by `sender`, with this body. */
const item = (id: string, upper: string | undefined, type: string, content: unknown, sender = 'ou_bo') => ({
  message_id: id,
  ...(upper ? { upper_message_id: upper } : {}),
  msg_type: type,
  create_time: '1717990000000',
  sender: { id: sender, id_type: 'open_id', sender_type: 'user' },
  body: { content: typeof content === 'string' ? content : JSON.stringify(content) },
});
const forward = (...children: unknown[]) => ({
  items: [item('om_f', undefined, 'merge_forward', 'Merged and Forwarded Message', 'ou_ana'), ...children],
});

describe('Feishu merged forward children (GET /open-apis/im/v1/messages/{id})', () => {
  it('reads each child by its msg_type as an event would be: a post as lines, a file as media', () => {
    const nodes = feishuForwardNodes(
      forward(
        item('om_1', 'om_f', 'post', {
          title: 'Plan',
          content: [
            [
              { tag: 'text', text: 'ship ' },
              { tag: 'a', text: 'docs', href: 'https://example.com' },
            ],
          ],
        }),
        item('om_2', 'om_f', 'file', { file_key: 'file_k', file_name: 'a.pdf' }),
        item('om_3', 'om_f', 'sticker', { file_key: 'st_k' }),
      ),
      'om_f',
    );
    expect(nodes).toEqual([
      {
        sender: { id: 'ou_bo' },
        content: 'Plan\nship docs (https://example.com)',
        timestamp: 1_717_990_000,
        media: [],
      },
      {
        sender: { id: 'ou_bo' },
        content: '',
        timestamp: 1_717_990_000,
        media: [{ type: 'document', ref: 'file:om_2:file_k' }],
      },
      { sender: { id: 'ou_bo' }, content: '[sticker]', timestamp: 1_717_990_000, media: [] },
    ]);
  });

  it("keeps a nested forward's id to read when the answer leaves its children out, and inlines them when it lists them", () => {
    const [alone] = feishuForwardNodes(
      forward(item('om_n', 'om_f', 'merge_forward', 'Merged and Forwarded Message')),
      'om_f',
    );
    expect(alone!.nested).toEqual({ id: 'om_n' });
    const [held] = feishuForwardNodes(
      forward(item('om_n', 'om_f', 'merge_forward', '{}'), item('om_d', 'om_n', 'text', { text: 'deep' })),
      'om_f',
    );
    expect(held!.nested).toEqual({
      id: 'om_n',
      nodes: [{ sender: { id: 'ou_bo' }, content: 'deep', timestamp: 1_717_990_000, media: [] }],
    });
  });

  it('reads a child listed twice, or under itself, once; a child without readable content as its type', () => {
    const nodes = feishuForwardNodes(
      forward(
        item('om_n', 'om_f', 'merge_forward', '{}'),
        item('om_n', 'om_n', 'merge_forward', '{}'),
        item('om_x', 'om_f', 'text', 'not json'),
      ),
      'om_f',
    );
    expect(nodes.map((node) => [node.content, node.nested])).toEqual([
      ['[merge_forward]', { id: 'om_n', nodes: [] }],
      ['[text]', undefined],
    ]);
  });

  it('refuses an answer without data.items, naming the forward', () => {
    expect(() => feishuForwardNodes({}, 'om_f')).toThrow(
      "Feishu's answer for message om_f: data.items is required (an array)",
    );
  });
});

describe('Feishu adapter: readForward', () => {
  let api: TestServer;
  let issued = 0;
  beforeAll(async () => {
    // The first token issued is refused, as Feishu refuses one dropped before its expiry.
    api = await serve((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/open-apis/auth/v3/tenant_access_token/internal') {
        issued++;
        res.end(JSON.stringify({ code: 0, tenant_access_token: `t-${issued}`, expire: 7200 }));
        return;
      }
      if (req.headers.authorization !== 'Bearer t-2') {
        res.statusCode = 400;
        res.end('{"code":99991663,"msg":"Invalid access token for authorization."}');
        return;
      }
      res.end(JSON.stringify({ code: 0, data: forward(item('om_1', 'om_f', 'text', { text: 'hi' })) }));
    });
  });
  afterAll(() => api.close());

  it('is there only with appId and appSecret, and only then does a merge_forward name itself in forward_id', () => {
    const fieldsOf = (adapter: Adapter) =>
      ingest(adapter, {
        headers: {},
        body: fixtureBytes('feishu', 'merge-forward.json'),
        query: new URLSearchParams(),
        now: NOW,
      }).events[0]!.fields;
    const bare = adapterFor({ verificationToken: 'fixture-secret' });
    expect(bare.readForward).toBeUndefined();
    expect(fieldsOf(bare)).toMatchObject({ forwarded: 'true', message_type: 'merge_forward' });
    expect(fieldsOf(bare)!.forward_id).toBeUndefined();
    const credentialed = adapterFor({ verificationToken: 'fixture-secret', appSecret: 's' });
    expect(credentialed.readForward).toBeTypeOf('function');
    expect(fieldsOf(credentialed)).toMatchObject({ forwarded: 'true', forward_id: 'om_fwd1' });
  });

  it('drops a token Feishu refuses and reads the forward with a new one', async () => {
    const adapter = adapterFor({ appSecret: 's', apiBaseUrl: `http://127.0.0.1:${api.port}` });
    const nodes = await adapter.readForward!('om_f', AbortSignal.timeout(5000));
    expect(nodes).toEqual([{ sender: { id: 'ou_bo' }, content: 'hi', timestamp: 1_717_990_000, media: [] }]);
    expect(issued).toBe(2);
    expect(api.hits.get('/open-apis/im/v1/messages/om_f')).toBe(2);
  });
});
