import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, describe, expect, it } from 'vitest';
import { adapters } from '../../src/adapters/index.js';
import { loadConfig } from '../../src/service/configure.js';
import { outputJson, outputOf, type Output } from '../../src/events/output.js';
import { createIntake } from '../../src/service/intake.js';
import { channelEntry } from '../adapters/suite.js';
import { seal } from '../adapters/wx-kit.js';
import { useRedis } from '../support/redis.js';
import { adapterFixtures } from '../fixtures/adapters.js';
import { fixtureBytes } from '../fixtures/index.js';
import { tempDir, until } from '../support/helpers.js';
import { silent } from '../support/logger.js';

const schema = JSON.parse(readFileSync(join(import.meta.dirname, '../../docs/schema/output-v1.schema.json'), 'utf8'));
const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);

/** Refused media hosts and a dead API base: downloads fail at once, as media errors, with no network. */
const DEAD = 'http://127.0.0.1:9';
const apiBases: Record<string, Record<string, string>> = {
  telegram: { apiBaseUrl: DEAD },
  whatsapp: { graphBaseUrl: DEAD },
  line: { apiDataBaseUrl: DEAD },
  slack: { apiBaseUrl: DEAD },
  dingtalk: { apiBaseUrl: DEAD },
  feishu: { apiBaseUrl: DEAD },
  discord: { apiBaseUrl: DEAD },
  wechat: { apiBaseUrl: DEAD },
  wecom: { apiBaseUrl: DEAD },
};

const NOW = 1_718_000_010_000;

/** Every sample delivery of an adapter, as the platform sends its bytes (WeCom's sealed as WeCom seals them). */
function deliveriesOf(name: string): Array<{ body: Buffer; query: URLSearchParams; contentType: string }> {
  if (name === 'generic') {
    return adapterFixtures
      .get('generic')!
      .samples()
      .map((sample) => ({
        body: Buffer.from(JSON.stringify(sample)),
        query: new URLSearchParams(),
        contentType: 'application/json',
      }));
  }
  const settings = adapterFixtures.get(name)!.settings as Record<string, string>;
  // Not QQ's callback URL validation (op 13): a signed handshake that carries no message, verified even with "verify": false.
  const handshake = (file: string) => name === 'qqbot' && file === 'validation.json';
  return readdirSync(join(import.meta.dirname, '../fixtures', name))
    .filter((file) => (file.endsWith('.json') || file.endsWith('.xml')) && !handshake(file))
    .map((file) => {
      const bytes = fixtureBytes(name, file);
      if (!file.endsWith('.xml')) return { body: bytes, query: new URLSearchParams(), contentType: 'application/json' };
      if (name !== 'wecom') return { body: bytes, query: new URLSearchParams(), contentType: 'text/xml' };
      const sealed = seal({
        token: 'fixture-secret',
        key: settings.encodingAESKey!,
        receiveId: settings.corpId!,
        message: bytes.toString(),
        timestamp: String(NOW / 1000),
        toUser: settings.corpId!,
        agentId: settings.agentId!,
      });
      return { body: sealed.body, query: sealed.query, contentType: 'text/xml' };
    });
}

/**
 * Every output of one adapter's samples through the real intake (a SQLite store unless `store` says): as emitted
 * in process, as stored (on SQLite, read back by a second intake on the same file), as streamed (SSE data).
 */
async function outputsOf(
  name: string,
  store?: (dir: string) => Record<string, unknown>,
): Promise<{ live: Output[]; stored: Output[]; streamed: unknown[] }> {
  const dir = tempDir();
  const descriptor = adapters.find((candidate) => candidate.name === name)!;
  const config = loadConfig({
    env: {},
    cwd: dir.path,
    file: {
      store: `sqlite:${join(dir.path, 'intake.db')}`,
      ...store?.(dir.path),
      logLevel: 'silent',
      media: { dir: 'media', retries: 0, timeoutMs: 500 },
      debounce: { windowMs: 10, maxWaitMs: 50 },
      correlation: { noticeHoldMs: 10 },
      // Unsigned: an optional secret left out (the generic channel checks one whenever it is set).
      channels: [
        channelEntry(descriptor, adapterFixtures.get(name)!, {
          verify: false,
          ...apiBases[name],
          ...(descriptor.secret && !descriptor.secret.required ? { [descriptor.secret.setting]: undefined } : {}),
        }),
      ],
    },
  });
  const intake = await createIntake({ config, logger: silent, cwd: dir.path });
  const live: Output[] = [];
  for (const type of ['chat.processedMessage', 'chat.notice', 'chat.request'] as const)
    intake.on(type, (output: Output) => {
      live.push(output);
    });
  for (const { body, query, contentType } of deliveriesOf(name)) {
    const answer = await intake.ingest('ch', {
      headers: { 'content-type': contentType },
      query,
      now: NOW,
      body,
      authenticated: true,
    });
    expect(answer.status, `${name}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
  }
  // Every buffer flushed, its downloads settled (closing would leave a batch waiting for media to the next start).
  await until(async () => {
    await intake.settle();
    return (await intake.store.openBuffers()) === 0;
  }, 10_000);
  let records = await intake.store.outboxAfter(0, 1000);
  await intake.close();
  if (!store) {
    // A SQLite file outlives the process: read back by the next start.
    const reopened = await createIntake({ config, logger: silent, cwd: dir.path });
    const again = await reopened.store.outboxAfter(0, 1000);
    await reopened.close();
    expect(again).toEqual(records);
    records = again;
  }
  dir.remove();
  return { live, stored: records.map(outputOf), streamed: records.map((record) => JSON.parse(outputJson(record))) };
}

describe('the output JSON Schema (docs/schema/output-v1.schema.json)', () => {
  const seen = new Map<string, number>();
  afterAll(() => {
    // Every adapter produced processed messages: a schema test that validated nothing cannot fail.
    for (const descriptor of adapters) expect(seen.get(descriptor.name), descriptor.name).toBeGreaterThan(0);
  });

  for (const descriptor of adapters) {
    it(`accepts every output of the ${descriptor.name} adapter's sample deliveries, live, stored and streamed, each message with a reply handle`, async () => {
      const { live, stored, streamed } = await outputsOf(descriptor.name);
      expect(stored.length).toBeGreaterThan(0);
      expect(live).toEqual(stored);
      expect(streamed).toEqual(stored);
      for (const output of stored) {
        const valid = validate(output);
        expect(valid ? [] : validate.errors, `${descriptor.name} ${output.type} ${JSON.stringify(output)}`).toEqual([]);
        expect(output.schemaVersion).toBe(1);
        if (output.type === 'chat.processedMessage') {
          expect(output.reply, JSON.stringify(output)).toMatchObject({
            ...output.replyBot,
            params: expect.any(Object),
          });
          expect(output.parts).toHaveLength(output.merged);
        }
      }
      seen.set(descriptor.name, stored.filter((output) => output.type === 'chat.processedMessage').length);
    });
  }

  describe('on the other stores', () => {
    const redis = useRedis();

    // The reply handle nests objects (reply_parameters) and the quote: each store keeps the output whole.
    for (const [label, store] of [
      ['memory', () => ({ store: 'memory' })],
      ['Redis', () => ({ store: redis.url, redis: { keyPrefix: `schema${Date.now()}` } })],
    ] as const) {
      it(`keeps reply, quote, parts and schemaVersion of Telegram outputs whole on the ${label} store`, async () => {
        const { live, stored } = await outputsOf('telegram', store);
        expect(live.length).toBeGreaterThan(0);
        expect(stored).toEqual(live);
        for (const output of stored) expect(validate(output) ? [] : validate.errors).toEqual([]);
        expect(
          stored.some(
            (output) =>
              output.type === 'chat.processedMessage' &&
              (output.reply?.params.reply_parameters as { message_id?: number } | undefined)?.message_id !== undefined,
          ),
        ).toBe(true);
      });
    }
  });

  it('refuses an output without schemaVersion or with a reply handle that has no parameters', () => {
    const output = {
      type: 'chat.processedMessage',
      id: 'o1',
      seq: 1,
      schemaVersion: 1,
      sessionKey: 's',
      content: 'hi',
      media: [],
      sourceChannel: 'generic',
      channel: 'g',
      timestamp: 1,
      messageIds: ['m1'],
      parts: [{ messageId: 'm1', timestamp: 1, senderId: 'u', bots: [{ channel: 'g' }] }],
      merged: 1,
      sender: { id: 'u' },
      conversation: { type: 'private', id: 's' },
      replyBot: { channel: 'g' },
      reply: { channel: 'g', params: { conversationId: 's' } },
      bots: [{ channel: 'g' }],
      mentionedBots: [],
      mediaErrors: [],
    };
    expect(validate(output)).toBe(true);
    const { schemaVersion: _dropped, ...unversioned } = output;
    expect(validate(unversioned)).toBe(false);
    expect(validate({ ...output, reply: { channel: 'g', params: {} } })).toBe(false);
    expect(validate({ ...output, unknownField: 1 })).toBe(false);
  });
});
