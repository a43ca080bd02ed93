import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { FlushScheduler } from '../../src/debounce/scheduler.js';
import type { BufferedPart, InboundEvent } from '../../src/events/inbound.js';
import type { OutboxDraft } from '../../src/core/ports/index.js';
import type { BufferRule, LeasedBatch, Store } from '../../src/core/ports/index.js';
import { MemoryStore } from '../../src/store/local/memory.js';

const rule: BufferRule = { windowMs: 1500, maxMessages: 3, maxWaitMs: 7500 };

let n = 0;
function event(sessionKey: string, text: string, sender = 'u1'): InboundEvent {
  n++;
  return {
    id: `e${n}`,
    kind: 'message',
    channel: 'c',
    adapter: 'generic',
    namespace: 'c',
    conversation: { type: 'private', id: sessionKey },
    sessionKey,
    sender: { id: sender },
    segments: [],
    text,
    media: [],
    mentions: [],
    timestamp: 0,
    raw: undefined,
  };
}

const draft = (batch: LeasedBatch): OutboxDraft => ({
  id: `o${batch.fence}`,
  type: 'chat.processedMessage',
  sessionKey: batch.sessionKey,
  channel: 'c',
  createdAt: Date.now(),
  body: JSON.stringify({ type: 'chat.processedMessage', id: `o${batch.fence}` }),
  state: 'none',
});

/** The scheduler on a real memory store, driven by vitest's fake clock. */
function setup(
  options: { rule?: Partial<BufferRule>; flush?: (batch: LeasedBatch, store: Store) => Promise<void> } = {},
) {
  const store = new MemoryStore();
  const batches: LeasedBatch[] = [];
  const errors: unknown[] = [];
  const scheduler = new FlushScheduler({ clock: systemClock, buffers: store, onError: (error) => errors.push(error) });
  const flush = options.flush
    ? (batch: LeasedBatch) => options.flush!(batch, store)
    : async (batch: LeasedBatch) => {
        batches.push(batch);
        await store.commit(batch, draft(batch), Date.now());
      };
  // Started on an empty store: `start()` below is a restart that finds what was left.
  const started = scheduler.start(flush);
  const start = async () => {
    await started;
    await scheduler.start(flush);
  };
  async function add(e: InboundEvent, add: { command?: boolean; receivedAt?: number } = {}): Promise<void> {
    const now = Date.now();
    const [verdict] = await store.admit(
      [
        {
          claims: [],
          rule: { ...rule, ...options.rule },
          closeNow: add.command ?? false,
          part: { debounceKey: `${e.sessionKey}\u0000${e.sender.id}`, receivedAt: add.receivedAt ?? now, event: e },
        },
      ],
      now,
    );
    if (verdict?.verdict === 'accepted') scheduler.due(verdict.deadline);
  }
  return { store, scheduler, batches, errors, add, start };
}

const texts = (batch: Pick<LeasedBatch, 'parts'> | undefined) => batch?.parts.map((p: BufferedPart) => p.event.text);

describe('FlushScheduler on the store', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => vi.useRealTimers());

  it('merges fragments that arrive inside the window into one batch', async () => {
    const { add, batches } = setup();
    await add(event('s', 'a'));
    await vi.advanceTimersByTimeAsync(1000);
    await add(event('s', 'b'));
    await vi.advanceTimersByTimeAsync(1499);
    expect(batches).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(batches).toHaveLength(1);
    expect(texts(batches[0])).toEqual(['a', 'b']);
    expect(batches[0]?.reason).toBe('window');
  });

  it('flushes at once when the buffer reaches maxMessages, and a fourth part starts the next batch', async () => {
    const { add, batches } = setup();
    for (const t of ['a', 'b', 'c', 'd']) await add(event('s', t));
    await vi.advanceTimersByTimeAsync(0);
    expect(batches).toHaveLength(1);
    expect(batches[0]?.reason).toBe('count');
    expect(texts(batches[0])).toEqual(['a', 'b', 'c']);
    await vi.advanceTimersByTimeAsync(1500);
    expect(texts(batches[1])).toEqual(['d']);
  });

  it('flushes at maxWaitMs after the first part however chatty the user is', async () => {
    const { add, batches } = setup({ rule: { maxMessages: 100 } });
    for (let i = 0; i < 10; i++) {
      await add(event('s', `m${i}`));
      await vi.advanceTimersByTimeAsync(1000);
    }
    // 10 parts over 10 s, each 1 s apart: the 1.5 s window never closes, the 7.5 s deadline does.
    expect(batches.length).toBeGreaterThanOrEqual(1);
    expect(batches[0]?.reason).toBe('max_wait');
    expect(batches[0]?.parts).toHaveLength(8);
  });

  it('flushes a command at once, with the command as the last part', async () => {
    const { add, batches } = setup();
    await add(event('s', 'hello'));
    await add(event('s', '/reset'), { command: true });
    await vi.advanceTimersByTimeAsync(0);
    expect(batches).toHaveLength(1);
    expect(batches[0]?.reason).toBe('command');
    expect(texts(batches[0])).toEqual(['hello', '/reset']);
  });

  it('keeps two senders of one group apart', async () => {
    const { add, batches } = setup();
    await add(event('g', 'from alice', 'alice'));
    await add(event('g', 'from bob', 'bob'));
    await vi.advanceTimersByTimeAsync(1500);
    expect(batches.map(texts)).toEqual([['from alice'], ['from bob']]);
  });

  it('emits batches of one session in order even when an earlier flush is slower', async () => {
    const order: string[] = [];
    const { add } = setup({
      flush: async (batch, store) => {
        if (batch.parts[0]?.event.text === 'slow') await new Promise((resolve) => setTimeout(resolve, 500));
        order.push(batch.parts[0]?.event.text as string);
        await store.commit(batch, draft(batch), Date.now());
      },
    });
    await add(event('s', 'slow', 'alice'));
    await vi.advanceTimersByTimeAsync(1500);
    await add(event('s', '/fast', 'bob'), { command: true });
    await vi.advanceTimersByTimeAsync(1000);
    expect(order).toEqual(['slow', '/fast']);
  });

  it('flushes every open buffer at close', async () => {
    const { add, batches, scheduler, store } = setup();
    await add(event('s1', 'a'));
    await add(event('s2', 'b'));
    await scheduler.close(true);
    expect(batches.map((b) => b.reason)).toEqual(['shutdown', 'shutdown']);
    expect(await store.openBuffers()).toBe(0);
  });

  it('flushes at start a buffer left by a previous run whose window already passed', async () => {
    const { add, batches, start } = setup();
    await add(event('s', 'left over'), { receivedAt: Date.now() - 60_000 });
    // No admission told this scheduler: it finds the deadline in the store.
    await start();
    await vi.advanceTimersByTimeAsync(10);
    expect(batches).toHaveLength(1);
  });

  it("tries a failed flush again with backoff, keeping the session's later batches behind it", async () => {
    const emitted: string[] = [];
    let failures = 2;
    const { add, errors } = setup({
      flush: async (batch, store) => {
        if (batch.parts[0]?.event.text === 'first' && failures-- > 0) throw new Error('store busy');
        emitted.push(texts(batch)!.join(' '));
        await store.commit(batch, draft(batch), Date.now());
      },
    });
    await add(event('s', 'first', 'alice'), { command: true });
    await add(event('s', '/second', 'bob'), { command: true });
    await vi.advanceTimersByTimeAsync(0);
    expect(emitted).toEqual([]);
    await vi.advanceTimersByTimeAsync(500);
    expect(emitted).toEqual([]);
    await vi.advanceTimersByTimeAsync(1010);
    expect(emitted).toEqual(['first', '/second']);
    expect(errors).toHaveLength(2);
  });

  it("at close, flushes a session's buffers one after another in the order they were due", async () => {
    const emitted: string[] = [];
    const { add, scheduler } = setup({
      flush: async (batch, store) => {
        // Alice's batch takes longer (a lookup, a download): side by side, Bob's would commit first.
        if (batch.parts[0]?.event.sender.id === 'alice') for (let i = 0; i < 20; i++) await Promise.resolve();
        emitted.push(texts(batch)!.join(' '));
        await store.commit(batch, draft(batch), Date.now());
      },
    });
    await add(event('group', 'photo', 'alice'));
    await add(event('group', 'text', 'bob'));
    await add(event('other', 'elsewhere', 'carol'));
    await scheduler.close(true);
    expect(emitted.filter((t) => t !== 'elsewhere')).toEqual(['photo', 'text']);
    expect(emitted).toContain('elsewhere');
  });

  it("at close, a failed batch keeps its session's later batches behind it for the next start", async () => {
    const emitted: string[] = [];
    const { add, errors, scheduler, store } = setup({
      flush: async (batch, store) => {
        if (batch.parts[0]?.event.text === 'photo') throw new Error('download cut short by the shutdown');
        emitted.push(texts(batch)!.join(' '));
        await store.commit(batch, draft(batch), Date.now());
      },
    });
    await add(event('group', 'photo', 'alice'));
    await add(event('group', 'text', 'bob'));
    await scheduler.close(true);
    expect(errors).toHaveLength(1);
    expect(emitted).toEqual([]);
    expect(await store.openBuffers()).toBe(2);
  });

  it('makes one attempt at shutdown and leaves the rest in the store for the next start', async () => {
    const { add, errors, scheduler, store } = setup({
      flush: async () => {
        throw new Error('store closed');
      },
    });
    await add(event('s', 'bye'));
    await scheduler.close(true);
    expect(errors).toHaveLength(1);
    expect(await store.openBuffers()).toBe(1);
  });

  it('drains a backlog in chunks, answering the event loop between them', async () => {
    const { add, batches, start } = setup();
    for (let i = 0; i < 200; i++) await add(event(`s${i}`, 'x'), { receivedAt: Date.now() - 60_000 });
    // Record how many batches were taken each time a timer of someone else got its turn.
    const seenAt: number[] = [];
    const probe = () => {
      seenAt.push(batches.length);
      if (batches.length < 200) setTimeout(probe, 0);
    };
    await start();
    setTimeout(probe, 0);
    await vi.advanceTimersByTimeAsync(50);
    expect(batches).toHaveLength(200);
    // 200 buffers in slices of 8: other timers ran while the backlog was only partly taken.
    expect(seenAt.some((n) => n > 0 && n < 200)).toBe(true);
  });

  it('answers the event loop between slices of one busy tick, not after the whole tick', async () => {
    const { add, batches, scheduler } = setup();
    // 20 buffers due in the same grid step, as under steady load.
    for (let i = 0; i < 20; i++) await add(event(`s${i}`, 'x'));
    const seenAt: number[] = [];
    await vi.advanceTimersByTimeAsync(rule.windowMs - 1);
    expect(batches).toHaveLength(0);
    // An I/O callback of the next loop turn (setImmediate stands in for a request).
    const probe = () => {
      seenAt.push(batches.length);
      if (batches.length < 20) setImmediate(probe);
    };
    setImmediate(probe);
    await vi.advanceTimersByTimeAsync(20);
    await scheduler.idle();
    expect(batches).toHaveLength(20);
    expect(seenAt.filter((n) => n > 0 && n < 20).length).toBeGreaterThanOrEqual(1);
    expect(Math.max(...seenAt.filter((n) => n < 20).map((n, i, all) => n - (all[i - 1] ?? 0)))).toBeLessThanOrEqual(8);
  });

  it('keeps up with a flood: each loop turn that admits many buffers is matched by as many flushes', async () => {
    const { add, batches, scheduler, start, store } = setup();
    // A backlog due now, then 10 loop turns that each admit 50 more due buffers (one socket read each).
    for (let i = 0; i < 100; i++) await add(event(`b${i}`, 'x'), { receivedAt: Date.now() - 60_000 });
    const seenAt: number[] = [];
    let turns = 0;
    const flood = async () => {
      seenAt.push(batches.length);
      if (turns++ >= 10) return;
      for (let i = 0; i < 50; i++) await add(event(`f${turns}-${i}`, 'x'), { receivedAt: Date.now() - 60_000 });
      setImmediate(() => void flood());
    };
    await start();
    setImmediate(() => void flood());
    await vi.advanceTimersByTimeAsync(50);
    await scheduler.idle();
    expect(batches).toHaveLength(600);
    // After the first turn, every turn took at least the 50 the one before it admitted.
    const steps = seenAt.slice(1).map((n, i) => n - (seenAt[i] as number));
    expect(steps.slice(1).every((step) => step >= 50)).toBe(true);
    expect(await store.openBuffers()).toBe(0);
  });
});

describe('regression: FlushScheduler while a session waits for its earlier flush', () => {
  /** Due at once: a buffer is leased as soon as it is admitted. */
  const dueAtOnce: BufferRule = { windowMs: 0, maxMessages: 3, maxWaitMs: 0 };
  const groupEvent = (id: string, sessionKey: string, sender: string): InboundEvent => ({
    id,
    kind: 'message',
    channel: 'c',
    adapter: 'generic',
    namespace: 'c',
    conversation: { type: 'group', id: sessionKey },
    sessionKey,
    sender: { id: sender },
    segments: [],
    text: id,
    media: [],
    mentions: [],
    timestamp: 0,
    raw: undefined,
  });

  it('does not poll the store in a loop while a due buffer waits behind a slow flush of its session', async () => {
    const store = new MemoryStore();
    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve));
    let lookups = 0;
    const buffers = {
      claimDue: (now: number, leaseMs: number, limit: number) => store.claimDue(now, leaseMs, limit),
      renewLease: (batch: LeasedBatch, now: number, leaseMs: number) => store.renewLease(batch, now, leaseMs),
      release: (batch: LeasedBatch, retryAt: number) => store.release(batch, retryAt),
      nextDeadline: () => {
        lookups++;
        return store.nextDeadline();
      },
    };
    const scheduler = new FlushScheduler({ clock: systemClock, buffers, onError: () => undefined });
    await scheduler.start(async (batch: LeasedBatch) => {
      await slow; // alice's batch waits for its media
      await store.commit(
        batch,
        {
          id: `o${batch.fence}`,
          type: 'chat.processedMessage',
          sessionKey: batch.sessionKey,
          channel: 'c',
          createdAt: Date.now(),
          body: '{}',
          state: 'none',
        },
        Date.now(),
      );
    });
    const now = Date.now();
    // Two senders of one group: one buffer each, both due now; only one may be leased at a time.
    for (const [id, sender] of [
      ['a1', 'alice'],
      ['b1', 'bob'],
    ] as const) {
      const [verdict] = await store.admit(
        [
          {
            claims: [],
            rule: dueAtOnce,
            closeNow: false,
            part: { debounceKey: `g\u0000${sender}`, receivedAt: now, event: groupEvent(id, 'g', sender) },
          },
        ],
        now,
      );
      if (verdict?.verdict === 'accepted') scheduler.due(verdict.deadline);
    }
    lookups = 0;
    await new Promise((resolve) => setTimeout(resolve, 300));
    const during = lookups;
    release();
    await scheduler.close(false);
    // Nothing changes in the store while alice's flush runs: a handful of lookups at most.
    expect(during).toBeLessThan(10);
  });
});
