import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../src/clock.js';
import type { DebounceOptions } from '../../src/config/schema.js';
import { Debouncer, type Batch } from '../../src/debounce/debouncer.js';
import type { BufferedPart } from '../../src/store/types.js';

const options: DebounceOptions = { windowMs: 1500, maxMessages: 3, maxWaitMs: 7500, media: 'all', flushCommands: true };

let n = 0;
function part(sessionKey: string, text: string, sender = 'u1'): BufferedPart {
  n++;
  return {
    id: `p${n}`, debounceKey: `${sessionKey}\u0000${sender}`, receivedAt: Date.now(),
    event: {
      id: `e${n}`, kind: 'message', channel: 'c', adapter: 'generic', namespace: 'c', conversation: { type: 'private', id: sessionKey },
      sessionKey, sender: { id: sender }, segments: [], text, media: [], mentions: [], timestamp: 0, raw: undefined,
    },
  };
}

describe('Debouncer', () => {
  let batches: Batch[];
  let debouncer: Debouncer;
  const make = (overrides: Partial<DebounceOptions> = {}, flush?: (batch: Batch) => Promise<void>) => new Debouncer({
    clock: systemClock,
    optionsFor: () => ({ ...options, ...overrides }),
    flush: flush ?? (async (batch) => { batches.push(batch); }),
    onError: (error) => { throw error; },
  });
  const texts = (batch: Batch | undefined) => batch?.parts.map((p) => p.event.text);

  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
    batches = [];
    debouncer = make();
  });
  afterEach(() => vi.useRealTimers());

  it('merges fragments that arrive inside the window into one batch', async () => {
    debouncer.add(part('s', 'a'), false);
    await vi.advanceTimersByTimeAsync(1000);
    debouncer.add(part('s', 'b'), false);
    await vi.advanceTimersByTimeAsync(1499);
    expect(batches).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(batches).toHaveLength(1);
    expect(texts(batches[0])).toEqual(['a', 'b']);
    expect(batches[0]?.reason).toBe('window');
  });

  it('flushes at once when the buffer reaches maxMessages', async () => {
    for (const t of ['a', 'b', 'c']) debouncer.add(part('s', t), false);
    await vi.advanceTimersByTimeAsync(0);
    expect(batches).toHaveLength(1);
    expect(batches[0]?.reason).toBe('count');
    expect(texts(batches[0])).toEqual(['a', 'b', 'c']);
  });

  it('flushes at maxWaitMs after the first part however chatty the user is', async () => {
    debouncer = make({ maxMessages: 100 });
    for (let i = 0; i < 10; i++) {
      debouncer.add(part('s', `m${i}`), false);
      await vi.advanceTimersByTimeAsync(1000);
    }
    // 10 parts over 10 s, each 1 s apart: the 1.5 s window never closes, the 7.5 s deadline does.
    expect(batches.length).toBeGreaterThanOrEqual(1);
    expect(batches[0]?.reason).toBe('max_wait');
    expect(batches[0]?.parts).toHaveLength(8);
  });

  it('flushes a command at once, with the command as the last part', async () => {
    debouncer.add(part('s', 'hello'), false);
    debouncer.add(part('s', '/reset'), true);
    await vi.advanceTimersByTimeAsync(0);
    expect(batches).toHaveLength(1);
    expect(batches[0]?.reason).toBe('command');
    expect(texts(batches[0])).toEqual(['hello', '/reset']);
  });

  it('does not flush commands early when flushCommands is off', async () => {
    debouncer = make({ flushCommands: false });
    debouncer.add(part('s', '/reset'), true);
    await vi.advanceTimersByTimeAsync(0);
    expect(batches).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1500);
    expect(batches).toHaveLength(1);
  });

  it('keeps two senders of one group apart', async () => {
    debouncer.add(part('g', 'from alice', 'alice'), false);
    debouncer.add(part('g', 'from bob', 'bob'), false);
    await vi.advanceTimersByTimeAsync(1500);
    expect(batches.map(texts)).toEqual([['from alice'], ['from bob']]);
  });

  it('emits batches of one session in order even when an earlier flush is slower', async () => {
    const order: string[] = [];
    debouncer = make({}, async (batch) => {
      if (batch.parts[0]?.event.text === 'slow') await new Promise((resolve) => setTimeout(resolve, 500));
      order.push(batch.parts[0]?.event.text as string);
    });
    debouncer.add(part('s', 'slow', 'alice'), false);
    await vi.advanceTimersByTimeAsync(1500);
    debouncer.add(part('s', '/fast', 'bob'), true);
    await vi.advanceTimersByTimeAsync(1000);
    expect(order).toEqual(['slow', '/fast']);
  });

  it('flushes every open buffer on flushAll', async () => {
    debouncer.add(part('s1', 'a'), false);
    debouncer.add(part('s2', 'b'), false);
    await debouncer.flushAll();
    expect(batches.map((b) => b.reason)).toEqual(['shutdown', 'shutdown']);
    expect(debouncer.open).toBe(0);
  });

  it('flushes at once a restored part whose window already passed', async () => {
    const old = part('s', 'left over');
    old.receivedAt = Date.now() - 60_000;
    debouncer.add(old, false);
    await vi.advanceTimersByTimeAsync(0);
    expect(batches).toHaveLength(1);
  });
});

describe('Debouncer.restore', () => {
  afterEach(() => vi.useRealTimers());

  it('puts every part of a buffer back before deciding, so a restart never splits a batch', async () => {
    vi.useFakeTimers({ now: 5_000_000 });
    const batches: Batch[] = [];
    const debouncer = new Debouncer({
      clock: systemClock, optionsFor: () => options, flush: async (batch) => { batches.push(batch); }, onError: () => {},
    });
    const parts = [part('s', 'one'), part('s', 'two'), part('t', 'other')];
    for (const p of parts) p.receivedAt = Date.now() - 60_000;
    debouncer.restore(parts);
    await vi.advanceTimersByTimeAsync(0);
    expect(batches.map((b) => b.parts.map((p) => p.event.text))).toEqual([['one', 'two'], ['other']]);
  });
});

describe('Debouncer flush failures', () => {
  afterEach(() => vi.useRealTimers());

  it("tries a failed flush again with backoff, keeping the session's later batches behind it", async () => {
    vi.useFakeTimers({ now: 9_000_000 });
    const emitted: string[] = [];
    let failures = 2;
    const errors: unknown[] = [];
    const debouncer = new Debouncer({
      clock: systemClock,
      optionsFor: () => options,
      flush: async (batch) => {
        if (batch.parts[0]?.event.text === 'first' && failures-- > 0) throw new Error('store busy');
        emitted.push(batch.parts.map((p) => p.event.text).join(' '));
      },
      onError: (error) => errors.push(error),
    });
    debouncer.add(part('s', 'first'), true);
    debouncer.add(part('s', '/second'), true);
    await vi.advanceTimersByTimeAsync(0);
    expect(emitted).toEqual([]);
    await vi.advanceTimersByTimeAsync(500);
    expect(emitted).toEqual([]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(emitted).toEqual(['first', '/second']);
    expect(errors).toHaveLength(2);
  });

  it('makes one attempt at shutdown and leaves the rest for the next start', async () => {
    const errors: unknown[] = [];
    const debouncer = new Debouncer({
      clock: systemClock, optionsFor: () => options,
      flush: async () => { throw new Error('store closed'); },
      onError: (error) => errors.push(error),
    });
    debouncer.add(part('s', 'bye'), false);
    await debouncer.flushAll();
    expect(errors).toHaveLength(1);
  });
});
