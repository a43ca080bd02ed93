import { describe, expect, it } from 'vitest';
import { ForwardReader } from '../../src/emit/forward-reader.js';
import type { BufferedPart } from '../../src/events/inbound.js';
import type { ForwardNode } from '../../src/events/reply.js';
import { ManualClock } from '../support/manual-clock.js';

const limits = { maxNodes: 100, maxDepth: 3, maxChars: 20_000, timeoutMs: 1000 };
const text = (content: string, nested?: ForwardNode['nested']): ForwardNode => ({
  sender: { id: '1' },
  content,
  timestamp: 10,
  media: [],
  ...(nested ? { nested } : {}),
});
const part = (id: string, forwardId?: string): BufferedPart =>
  ({
    id,
    debounceKey: 'k',
    receivedAt: 0,
    event: { channel: 'qq', botId: '10001', fields: forwardId ? { forwarded: 'true', forward_id: forwardId } : {} },
  }) as unknown as BufferedPart;

function reader(forwards: Record<string, ForwardNode[]>, overrides: Partial<typeof limits> = {}) {
  const asked: string[] = [];
  const stage = new ForwardReader({
    clock: new ManualClock(),
    limitsOf: () => ({ ...limits, ...overrides }),
    read: async (_channel, _botId, id) => {
      asked.push(id);
      const nodes = forwards[id];
      if (!nodes) throw Object.assign(new Error('get_forward_msg answered retcode 1404'), { code: 'refused' });
      return nodes;
    },
  });
  return { stage, asked };
}

describe('reading merged forwards', () => {
  it('reads each part that names a forward once, begun at admission and collected at flush', async () => {
    const { stage, asked } = reader({ f: [text('a'), text('b')] });
    stage.begin(part('1', 'f'));
    stage.begin(part('1', 'f'));
    const [none, read] = await stage.collect([part('0'), part('1', 'f')]);
    expect(none).toBeUndefined();
    expect(read).toEqual({ forwarded: [text('a'), text('b')], errors: [] });
    expect(asked).toEqual(['f']);
  });

  it('stops at forwards.maxNodes messages, nested ones counted, and says so', async () => {
    const { stage } = reader({ f: [text('a', { id: 'g' }), text('b')], g: [text('c'), text('d')] }, { maxNodes: 3 });
    const [read] = await stage.collect([part('1', 'f')]);
    expect(read!.forwarded.map((node) => node.content)).toEqual(['a', 'c', 'd']);
    expect(read!.errors).toEqual([{ id: 'f', reason: 'too_large: more than 3 messages (forwards.maxNodes)' }]);
  });

  it('cuts the text at forwards.maxChars, and keeps nodes a nested forward gives inline without reading it', async () => {
    const { stage, asked } = reader({ f: [text('abcd', { nodes: [text('efgh')] }), text('ij')] }, { maxChars: 6 });
    const [read] = await stage.collect([part('1', 'f')]);
    expect(read!.forwarded.map((node) => node.content)).toEqual(['abcd', 'ef']);
    expect(read!.errors).toEqual([{ id: 'f', reason: 'too_large: more than 6 characters (forwards.maxChars)' }]);
    expect(asked).toEqual(['f']);
  });

  it('lists a forward the bot refuses, whole or nested, with the reason, keeping what was read', async () => {
    const { stage } = reader({ f: [text('a', { id: 'gone' }), text('b')] });
    const [read, missing] = await stage.collect([part('1', 'f'), part('2', 'nope')]);
    expect(read!.forwarded.map((node) => node.content)).toEqual(['a', 'b']);
    expect(read!.errors).toEqual([{ id: 'gone', reason: 'refused: get_forward_msg answered retcode 1404' }]);
    expect(missing).toEqual({
      forwarded: [],
      errors: [{ id: 'nope', reason: 'refused: get_forward_msg answered retcode 1404' }],
    });
  });

  it('counts senders’ names and media references toward forwards.maxChars, so neither carries an answer past it', async () => {
    const named: ForwardNode = { ...text('a'), sender: { id: '2', name: 'n'.repeat(30_000) } };
    const image = { type: 'image' as const, ref: `https://192.0.2.1/${'i'.repeat(90)}` };
    const pictures: ForwardNode = { ...text('b'), media: Array.from({ length: 10_000 }, () => image) };
    const { stage } = reader({ f: [text('x'), named], g: [text('y'), pictures] });
    const [byName, byMedia] = await stage.collect([part('1', 'f'), part('2', 'g')]);
    expect(byName!.forwarded.map((node) => node.content)).toEqual(['x']);
    expect(byName!.errors).toEqual([{ id: 'f', reason: 'too_large: more than 20000 characters (forwards.maxChars)' }]);
    expect(byMedia!.forwarded.map((node) => node.content)).toEqual(['y', 'b']);
    expect(byMedia!.forwarded[1]!.media.length).toBeLessThan(200);
    expect(byMedia!.errors).toEqual([{ id: 'g', reason: 'too_large: more than 20000 characters (forwards.maxChars)' }]);
  });

  it('reads a forward that forwards itself no deeper than forwards.maxDepth, and no more often than it has messages', async () => {
    const self = Array.from({ length: 100 }, (_, i) => text(`m${i}`, { id: 'f' }));
    const { stage, asked } = reader({ f: self });
    const [read] = await stage.collect([part('1', 'f')]);
    expect(read!.forwarded.map((node) => node.content).slice(0, 4)).toEqual(['m0', 'm0', 'm0', 'm1']);
    expect(read!.forwarded).toHaveLength(100);
    expect(asked.length).toBeLessThanOrEqual(100);
    expect(new Set(read!.errors.map((error) => error.reason.split(':')[0]))).toEqual(
      new Set(['too_deep', 'too_large']),
    );
  });

  it('settles at forwards.timeoutMs whatever the bot does after, and what it answers later is not added', async () => {
    const clock = new ManualClock();
    let answer: (nodes: ForwardNode[]) => void = () => {};
    const stage = new ForwardReader({
      clock,
      limitsOf: () => limits,
      read: () => new Promise<ForwardNode[]>((resolve) => (answer = resolve)),
    });
    const reading = stage.collect([part('1', 'f')]);
    await clock.advance(1000);
    const [read] = await reading;
    answer([text('late')]);
    await clock.advance(1);
    expect(read).toEqual({
      forwarded: [],
      errors: [{ id: 'f', reason: 'timeout: not read within 1000 ms (forwards.timeoutMs)' }],
    });
  });

  it('keeps at most maxKept reads no flush has collected, the oldest let go first and read again if its flush comes', async () => {
    const asked: string[] = [];
    const clock = new ManualClock();
    const stage = new ForwardReader({
      clock,
      limitsOf: () => limits,
      maxKept: 2,
      read: async (_channel, _botId, id) => (asked.push(id), [text(id)]),
    });
    // Parts of batches kept as context, or flushed on another instance, are never collected here.
    for (const id of ['a', 'b', 'c']) stage.begin(part(id, `f${id}`));
    const [read] = await stage.collect([part('a', 'fa')]);
    expect(read!.forwarded.map((node) => node.content)).toEqual(['fa']);
    expect(asked).toEqual(['fa', 'fb', 'fc', 'fa']);
    const batch = await stage.collect(['x', 'y', 'z'].map((id) => part(id, `f${id}`)));
    expect(batch.map((one) => one!.forwarded[0]!.content)).toEqual(['fx', 'fy', 'fz']);
  });
});
