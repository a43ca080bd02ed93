import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createAdapter } from '../../src/adapters/index.js';
import { loadConfig } from '../../src/service/configure.js';
import { Channels } from '../../src/service/channels.js';
import { Bots, botsOf, pickReplyBot, soloRecord, type CorrelationOptions } from '../../src/correlate/bots.js';
import { contentSignature, correlationKey } from '../../src/correlate/signature.js';
import type { CorrelationRecord, InboundEvent } from '../../src/events/inbound.js';
import { MemoryStore } from '../../src/store/local/memory.js';
import { fixture } from '../fixtures/index.js';

const channels = loadConfig({
  env: {},
  file: {
    channels: [
      { id: 'qq-a', adapter: 'onebot', verify: false },
      { id: 'qq-b', adapter: 'onebot', verify: false },
      { id: 'qq-c', adapter: 'onebot', verify: false },
    ],
  },
}).channels;
const adapters = Object.fromEntries(channels.map((c) => [c.id, createAdapter(c)]));

function deliver(channel: string, body: unknown): InboundEvent {
  return adapters[channel]!.normalize(body, {
    headers: {},
    body: Buffer.alloc(0),
    query: new URLSearchParams(),
    now: Date.now(),
  }).events[0]!;
}
const load = (name: string) => fixture('onebot', name);

interface Observation {
  duplicate: boolean;
  retry: boolean;
  record?: CorrelationRecord;
}

/**
 * Correlation as the service runs it: the bot directory builds the step, the store decides
 * (groups are store state, so they hold across restarts and instances).
 */
function harness(overrides: Partial<CorrelationOptions> & { maxGroups?: number } = {}) {
  const { maxGroups, ...rest } = overrides;
  const bots = new Bots({
    crossAdapter: true,
    messageWindowMs: 15_000,
    eventWindowMs: 60_000,
    correlatedNamespaces: new Set(['qq']),
    ...rest,
  });
  const store = new MemoryStore({ maxCorrelationGroups: maxGroups ?? 4096 });
  const groups = new Map<InboundEvent, CorrelationRecord>();
  return {
    bots,
    store,
    groups,
    async observe(event: InboundEvent): Promise<Observation> {
      const now = Date.now();
      const step = bots.step(event, now);
      const [verdict] = await store.admit(
        [
          {
            claims: [],
            part: { debounceKey: `${event.channel}:${event.id}`, receivedAt: now, event },
            rule: { windowMs: 60_000, maxWaitMs: 60_000, maxMessages: 100 },
            closeNow: false,
            ...(step ? { correlation: step } : {}),
          },
        ],
        now,
      );
      if (verdict?.verdict === 'correlated') {
        groups.set(event, verdict.correlation);
        return { duplicate: true, retry: verdict.retry, record: verdict.correlation };
      }
      const record = verdict?.verdict === 'accepted' ? verdict.correlation : undefined;
      if (record) groups.set(event, record);
      return record ? { duplicate: false, retry: false, record } : { duplicate: false, retry: false };
    },
    pickReplyBot: (event: InboundEvent) =>
      pickReplyBot(bots.mentionedBots(event), botsOf(groups.get(event), event), event),
    botsForEvent: (event: InboundEvent) => botsOf(groups.get(event), event),
    correlation: (event: InboundEvent) => groups.get(event) ?? soloRecord(event),
  };
}

describe('cross-adapter correlation', () => {
  let correlator: ReturnType<typeof harness>;
  const make = (overrides: Parameters<typeof harness>[0] = {}) => harness(overrides);
  beforeEach(() => {
    vi.useFakeTimers({ now: 1718000000_000 });
    correlator = make();
  });
  afterEach(() => vi.useRealTimers());
  it('meets the same group message from NapCat and go-cqhttp (md5 vs md5 in the file name, whitespace after @)', async () => {
    const a = await correlator.observe(deliver('qq-a', load('napcat-group.json')));
    const b = await correlator.observe(deliver('qq-b', load('gocqhttp-group.json')));
    expect(a.duplicate).toBe(false);
    expect(b).toMatchObject({ duplicate: true, retry: false });
    expect(b.record!.deliveries.map((d) => [d.channel, d.botId, d.ids.message_id])).toEqual([
      ['qq-a', '10001000', '-2147480001'],
      ['qq-b', '20002000', '884213'],
    ]);
  });

  it('meets two Lagrange bots whose image URLs differ only in rkey', async () => {
    expect((await correlator.observe(deliver('qq-a', load('lagrange-group.json')))).duplicate).toBe(false);
    expect((await correlator.observe(deliver('qq-b', load('lagrange-group-bot2.json')))).duplicate).toBe(true);
  });

  it('re-admits the same content once the window from the first sighting has passed', async () => {
    await correlator.observe(deliver('qq-a', load('napcat-group.json')));
    vi.advanceTimersByTime(14_999);
    expect((await correlator.observe(deliver('qq-b', load('gocqhttp-group.json')))).duplicate).toBe(true);
    vi.advanceTimersByTime(1);
    expect((await correlator.observe(deliver('qq-c', load('gocqhttp-group.json')))).duplicate).toBe(false);
  });

  it('treats a repeat from the same bot with a new message id as a new message, and its retry as a retry', async () => {
    const first = load('napcat-group.json');
    await correlator.observe(deliver('qq-a', first));
    const repeat = await correlator.observe(deliver('qq-a', { ...first, message_id: 777 }));
    expect(repeat.duplicate).toBe(false);
    const retry = await correlator.observe(deliver('qq-a', { ...first, message_id: 777 }));
    expect(retry).toMatchObject({ duplicate: true, retry: true });
    // The other bot's copy of the repeat joins the new group.
    expect(
      (await correlator.observe(deliver('qq-b', load('gocqhttp-group.json')))).record?.deliveries.map(
        (d) => d.ids.message_id,
      ),
    ).toEqual(['777', '884213']);
  });

  it('evicts the oldest group past maxGroups and counts it', async () => {
    correlator = make({ maxGroups: 2 });
    for (const text of ['one', 'two', 'three'])
      await correlator.observe(
        deliver('qq-a', { ...load('private-vector.json'), message: text, message_id: text.length }),
      );
    expect(correlator.store.correlationStats()).toEqual({ groups: 2, evicted: 1 });
    expect(
      (await correlator.observe(deliver('qq-b', { ...load('private-vector.json'), self_id: 2, message: 'one' })))
        .duplicate,
    ).toBe(false);
    expect(
      (
        await correlator.observe(
          deliver('qq-b', { ...load('private-vector.json'), self_id: 2, message: 'three', message_id: 5 }),
        )
      ).duplicate,
    ).toBe(true);
  });

  it('meets notices that straddle a second boundary, but not ones far apart', async () => {
    const notice = load('notice-group-increase.json');
    await correlator.observe(deliver('qq-a', notice));
    expect(
      (await correlator.observe(deliver('qq-b', { ...notice, self_id: 2, time: notice.time + 1 }))).duplicate,
    ).toBe(true);
    vi.advanceTimersByTime(30_000);
    expect(
      (await correlator.observe(deliver('qq-c', { ...notice, self_id: 3, time: notice.time + 30 }))).duplicate,
    ).toBe(false);
  });

  it('keys pokes by target and recalls without their per-bot message id', async () => {
    const poke = load('notice-poke.json');
    await correlator.observe(deliver('qq-a', poke));
    expect((await correlator.observe(deliver('qq-b', { ...poke, self_id: 2, target_id: 999 }))).duplicate).toBe(false);
    const recall = load('notice-recall.json');
    await correlator.observe(deliver('qq-a', recall));
    expect((await correlator.observe(deliver('qq-b', { ...recall, self_id: 2, message_id: 4242 }))).duplicate).toBe(
      true,
    );
  });

  it("keeps every participant's own request flag", async () => {
    const request = load('request-group-add.json');
    await correlator.observe(deliver('qq-a', request));
    const second = await correlator.observe(deliver('qq-b', { ...request, self_id: 2, flag: 'flag-from-bot-b' }));
    expect(second.record!.deliveries.map((d) => d.ids.flag)).toEqual(['flag-from-bot-a', 'flag-from-bot-b']);
  });

  it('picks the mentioned connected bot to reply even when its copy arrived second', async () => {
    const first = deliver('qq-a', load('napcat-group.json'));
    const second = deliver('qq-b', load('gocqhttp-group.json'));
    await correlator.observe(first);
    await correlator.observe(second);
    // The message @-mentions 20002000, the bot of qq-b, whose delivery lost the race.
    expect(correlator.pickReplyBot(first)).toEqual({ channel: 'qq-b', botId: '20002000' });
    expect(correlator.bots.mentionedBots(first)).toEqual([{ channel: 'qq-b', botId: '20002000' }]);
    expect(correlator.botsForEvent(second)).toEqual([
      { channel: 'qq-a', botId: '10001000' },
      { channel: 'qq-b', botId: '20002000' },
    ]);
  });

  it('falls back to the first arrival, then to the delivering bot', async () => {
    const plain = deliver('qq-a', load('private-vector.json'));
    await correlator.observe(plain);
    expect(correlator.pickReplyBot(plain)).toEqual({ channel: 'qq-a', botId: '10001000' });
    const unseen = deliver('qq-c', { ...load('private-vector.json'), self_id: 3 });
    expect(correlator.pickReplyBot(unseen)).toEqual({ channel: 'qq-c', botId: '3' });
  });

  it('never marks duplicates when crossAdapter is off', async () => {
    correlator = make({ crossAdapter: false });
    await correlator.observe(deliver('qq-a', load('napcat-group.json')));
    expect((await correlator.observe(deliver('qq-b', load('gocqhttp-group.json')))).duplicate).toBe(false);
  });

  it('does not correlate in a namespace where no other bot can deliver, yet still answers the views', async () => {
    correlator = make({ correlatedNamespaces: new Set() });
    const first = deliver('qq-a', load('napcat-group.json'));
    expect((await correlator.observe(first)).duplicate).toBe(false);
    expect((await correlator.observe(deliver('qq-b', load('gocqhttp-group.json')))).duplicate).toBe(false);
    expect(correlator.store.correlationStats().groups).toBe(0);
    expect(correlator.correlation(first).deliveries).toMatchObject([{ channel: 'qq-a', botId: '10001000' }]);
    expect(correlator.pickReplyBot(first)).toEqual({ channel: 'qq-b', botId: '20002000' });
  });

  it('keeps namespaces apart', async () => {
    const qq = deliver('qq-a', load('private-vector.json'));
    expect(correlationKey({ ...qq, namespace: 'qqguild' })).not.toBe(correlationKey(qq));
  });
});

describe('regression: namespaces where several bots deliver through one channel', () => {
  const namespacesOf = (list: Array<Record<string, unknown>>) =>
    [...new Channels(loadConfig({ env: {}, file: { channels: list } })).correlatedNamespaces()].sort();

  it('correlates a namespace one OneBot channel serves over HTTP or a reverse WebSocket (any number of bots post or connect there)', () => {
    expect(namespacesOf([{ id: 'qq', adapter: 'onebot', verify: false }])).toEqual(['qq']);
    expect(namespacesOf([{ id: 'qq', adapter: 'onebot', transport: 'ws-reverse', verify: false }])).toEqual(['qq']);
  });

  it('keeps correlation off where one single-bot channel serves a namespace alone, and on where several channels share one', () => {
    const telegram = { id: 'tg', adapter: 'telegram', secretToken: 'tg-secret' };
    const slack = { id: 'sl', adapter: 'slack', signingSecret: 'sl-secret' };
    const forward = { id: 'qq-fwd', adapter: 'onebot', transport: 'ws', url: 'ws://127.0.0.1:3001' };
    expect(namespacesOf([telegram, slack, forward])).toEqual([]);
    expect(namespacesOf([telegram, { ...telegram, id: 'tg-2' }, forward, { ...forward, id: 'qq-fwd-2' }])).toEqual([
      'qq',
      'tg',
    ]);
  });

  it('picks a mentioned bot to reply once a correlation group names it, though this process never heard from it', () => {
    const bots = new Bots({
      crossAdapter: true,
      messageWindowMs: 15_000,
      eventWindowMs: 60_000,
      correlatedNamespaces: new Set(['qq']),
    });
    // Bot A's copy, which @-mentions bot B (20002000); B's copy reached another instance.
    const event = deliver('qq-a', load('napcat-group.json'));
    expect(bots.mentionedBots(event)).toEqual([]);
    const group = soloRecord(event);
    group.deliveries.push({ channel: 'qq-a', adapter: 'onebot', botId: '20002000', ids: {}, at: 0 });
    bots.learn(group, (channel) => (channel === 'qq-a' ? 'qq' : undefined));
    expect(bots.mentionedBots(event)).toEqual([{ channel: 'qq-a', botId: '20002000' }]);
  });
});

describe('contentSignature', () => {
  it('merges adjacent text, trims it, and ignores replies', () => {
    expect(
      contentSignature([
        { type: 'text', data: { text: ' a ' } },
        { type: 'reply', data: { id: '1' } },
        { type: 'text', data: { text: 'b' } },
      ]),
    ).toBe(contentSignature([{ type: 'text', data: { text: 'a b' } }]));
  });

  it('signs cards by canonical JSON and keeps two different images apart', () => {
    const card = (text: string) => contentSignature([{ type: 'json', data: { data: text } }]);
    expect(card('{"a":1,"b":{"c":2}}')).toBe(card('{ "b": {"c": 2}, "a": 1 }'));
    expect(card('{"a":1}')).not.toBe(card('{"a":2}'));
    const image = (file: string) => contentSignature([{ type: 'image', data: { file } }]);
    expect(image('AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.png')).not.toBe(image('BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB.png'));
  });

  it('cuts text at 256 characters and keeps video, voice and files by type only', () => {
    const long = 'x'.repeat(256);
    expect(contentSignature([{ type: 'text', data: { text: long + 'tail' } }])).toBe(
      contentSignature([{ type: 'text', data: { text: long + 'other' } }]),
    );
    expect(contentSignature([{ type: 'video', data: { file: 'protobuf://a' } }])).toBe(
      contentSignature([{ type: 'video', data: { url: 'https://b' } }]),
    );
  });
});
