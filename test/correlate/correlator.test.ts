import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { onebotAdapter } from '../../src/adapters/onebot.js';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config/load.js';
import { Correlator } from '../../src/correlate/correlator.js';
import { contentSignature, correlationKey } from '../../src/correlate/signature.js';
import type { InboundEvent } from '../../src/events.js';
import { fixture } from '../fixtures/index.js';

const channels = loadConfig({ env: {}, file: { channels: [
  { id: 'qq-a', adapter: 'onebot', verify: false }, { id: 'qq-b', adapter: 'onebot', verify: false }, { id: 'qq-c', adapter: 'onebot', verify: false },
] } }).channels;
const adapters = Object.fromEntries(channels.map((c) => [c.id, onebotAdapter(c)]));

function deliver(channel: string, body: unknown): InboundEvent {
  return adapters[channel]!.normalize(body, { headers: {}, body: Buffer.alloc(0), query: new URLSearchParams(), now: Date.now() }).events[0]!;
}
const load = (name: string) => fixture('onebot', name);

describe('Correlator', () => {
  let correlator: Correlator;
  const make = (overrides = {}) => new Correlator({ crossAdapter: true, messageWindowMs: 15_000, eventWindowMs: 60_000, maxGroups: 4096, clock: systemClock, sharedNamespaces: new Set(['qq']), ...overrides });
  beforeEach(() => {
    vi.useFakeTimers({ now: 1718000000_000 });
    correlator = make();
  });
  afterEach(() => vi.useRealTimers());

  it('meets the same group message from NapCat and go-cqhttp (md5 vs md5 in the file name, whitespace after @)', () => {
    const a = correlator.observe(deliver('qq-a', load('napcat-group.json')));
    const b = correlator.observe(deliver('qq-b', load('gocqhttp-group.json')));
    expect(a.duplicate).toBe(false);
    expect(b).toMatchObject({ duplicate: true, retry: false });
    expect(b.record!.deliveries.map((d) => [d.channel, d.botId, d.ids.message_id])).toEqual([['qq-a', '10001000', '-2147480001'], ['qq-b', '20002000', '884213']]);
  });

  it('meets two Lagrange bots whose image URLs differ only in rkey', () => {
    expect(correlator.observe(deliver('qq-a', load('lagrange-group.json'))).duplicate).toBe(false);
    expect(correlator.observe(deliver('qq-b', load('lagrange-group-bot2.json'))).duplicate).toBe(true);
  });

  it('re-admits the same content once the window from the first sighting has passed', () => {
    correlator.observe(deliver('qq-a', load('napcat-group.json')));
    vi.advanceTimersByTime(14_999);
    expect(correlator.observe(deliver('qq-b', load('gocqhttp-group.json'))).duplicate).toBe(true);
    vi.advanceTimersByTime(1);
    expect(correlator.observe(deliver('qq-c', load('gocqhttp-group.json'))).duplicate).toBe(false);
  });

  it('treats a repeat from the same bot with a new message id as a new message, and its retry as a retry', () => {
    const first = load('napcat-group.json');
    correlator.observe(deliver('qq-a', first));
    const repeat = correlator.observe(deliver('qq-a', { ...first, message_id: 777 }));
    expect(repeat.duplicate).toBe(false);
    const retry = correlator.observe(deliver('qq-a', { ...first, message_id: 777 }));
    expect(retry).toMatchObject({ duplicate: true, retry: true });
    // The other bot's copy of the repeat joins the new group.
    expect(correlator.observe(deliver('qq-b', load('gocqhttp-group.json'))).record).toBe(repeat.record);
  });

  it('evicts the oldest group past maxGroups and counts it', () => {
    correlator = make({ maxGroups: 2 });
    for (const text of ['one', 'two', 'three']) correlator.observe(deliver('qq-a', { ...load('private-vector.json'), message: text, message_id: text.length }));
    expect(correlator.stats()).toMatchObject({ groups: 2, observed: 3, duplicates: 0, evicted: 1 });
    expect(correlator.observe(deliver('qq-b', { ...load('private-vector.json'), self_id: 2, message: 'one' })).duplicate).toBe(false);
    expect(correlator.observe(deliver('qq-b', { ...load('private-vector.json'), self_id: 2, message: 'three', message_id: 5 })).duplicate).toBe(true);
  });

  it('meets notices that straddle a second boundary, but not ones far apart', () => {
    const notice = load('notice-group-increase.json');
    correlator.observe(deliver('qq-a', notice));
    expect(correlator.observe(deliver('qq-b', { ...notice, self_id: 2, time: notice.time + 1 })).duplicate).toBe(true);
    vi.advanceTimersByTime(30_000);
    expect(correlator.observe(deliver('qq-c', { ...notice, self_id: 3, time: notice.time + 30 })).duplicate).toBe(false);
  });

  it('keys pokes by target and recalls without their per-bot message id', () => {
    const poke = load('notice-poke.json');
    correlator.observe(deliver('qq-a', poke));
    expect(correlator.observe(deliver('qq-b', { ...poke, self_id: 2, target_id: 999 })).duplicate).toBe(false);
    const recall = load('notice-recall.json');
    correlator.observe(deliver('qq-a', recall));
    expect(correlator.observe(deliver('qq-b', { ...recall, self_id: 2, message_id: 4242 })).duplicate).toBe(true);
  });

  it('keeps every participant\'s own request flag', () => {
    const request = load('request-group-add.json');
    correlator.observe(deliver('qq-a', request));
    const second = correlator.observe(deliver('qq-b', { ...request, self_id: 2, flag: 'flag-from-bot-b' }));
    expect(second.record!.deliveries.map((d) => d.ids.flag)).toEqual(['flag-from-bot-a', 'flag-from-bot-b']);
  });

  it('picks the mentioned connected bot to reply even when its copy arrived second', () => {
    const first = deliver('qq-a', load('napcat-group.json'));
    const second = deliver('qq-b', load('gocqhttp-group.json'));
    correlator.observe(first);
    correlator.observe(second);
    // The message @-mentions 20002000, the bot of qq-b, whose delivery lost the race.
    expect(correlator.pickReplyBot(first)).toEqual({ channel: 'qq-b', botId: '20002000' });
    expect(correlator.mentionedBots(first)).toEqual([{ channel: 'qq-b', botId: '20002000' }]);
    expect(correlator.botsForEvent(second)).toEqual([{ channel: 'qq-a', botId: '10001000' }, { channel: 'qq-b', botId: '20002000' }]);
  });

  it('falls back to the first arrival, then to the delivering bot', () => {
    const plain = deliver('qq-a', load('private-vector.json'));
    correlator.observe(plain);
    expect(correlator.pickReplyBot(plain)).toEqual({ channel: 'qq-a', botId: '10001000' });
    const unseen = deliver('qq-c', { ...load('private-vector.json'), self_id: 3 });
    expect(correlator.pickReplyBot(unseen)).toEqual({ channel: 'qq-c', botId: '3' });
  });

  it('never marks duplicates when crossAdapter is off', () => {
    correlator = make({ crossAdapter: false });
    correlator.observe(deliver('qq-a', load('napcat-group.json')));
    expect(correlator.observe(deliver('qq-b', load('gocqhttp-group.json'))).duplicate).toBe(false);
  });

  it('does not correlate in a namespace that only one channel serves, yet still answers the views', () => {
    correlator = make({ sharedNamespaces: new Set() });
    const first = deliver('qq-a', load('napcat-group.json'));
    expect(correlator.observe(first).duplicate).toBe(false);
    expect(correlator.observe(deliver('qq-b', load('gocqhttp-group.json'))).duplicate).toBe(false);
    expect(correlator.stats().groups).toBe(0);
    expect(correlator.correlation(first).deliveries).toMatchObject([{ channel: 'qq-a', botId: '10001000' }]);
    expect(correlator.pickReplyBot(first)).toEqual({ channel: 'qq-b', botId: '20002000' });
  });

  it('keeps namespaces apart', () => {
    const qq = deliver('qq-a', load('private-vector.json'));
    expect(correlationKey({ ...qq, namespace: 'qqguild' })).not.toBe(correlationKey(qq));
  });
});

describe('contentSignature', () => {
  it('merges adjacent text, trims it, and ignores replies', () => {
    expect(contentSignature([{ type: 'text', data: { text: ' a ' } }, { type: 'reply', data: { id: '1' } }, { type: 'text', data: { text: 'b' } }]))
      .toBe(contentSignature([{ type: 'text', data: { text: 'a b' } }]));
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
    expect(contentSignature([{ type: 'text', data: { text: long + 'tail' } }])).toBe(contentSignature([{ type: 'text', data: { text: long + 'other' } }]));
    expect(contentSignature([{ type: 'video', data: { file: 'protobuf://a' } }])).toBe(contentSignature([{ type: 'video', data: { url: 'https://b' } }]));
  });
});
