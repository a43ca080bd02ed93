import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { FlushScheduler } from '../../src/debounce/scheduler.js';
import type { InboundEvent } from '../../src/events/inbound.js';
import type { BufferRule, LeasedBatch } from '../../src/core/ports/index.js';
import { MemoryStore } from '../../src/store/local/memory.js';

const rule: BufferRule = { windowMs: 0, maxMessages: 3, maxWaitMs: 0 };

function event(id: string, sessionKey: string, sender: string): InboundEvent {
  return {
    id, kind: 'message', channel: 'c', adapter: 'generic', namespace: 'c', conversation: { type: 'group', id: sessionKey },
    sessionKey, sender: { id: sender }, segments: [], text: id, media: [], mentions: [], timestamp: 0, raw: undefined,
  };
}

describe('FlushScheduler while a session waits for its earlier flush', () => {
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
      await store.commit(batch, { id: `o${batch.fence}`, type: 'chat.processedMessage', sessionKey: batch.sessionKey, channel: 'c', createdAt: Date.now(), body: '{}', state: 'none' }, Date.now());
    });
    const now = Date.now();
    // Two senders of one group: one buffer each, both due now; only one may be leased at a time.
    for (const [id, sender] of [['a1', 'alice'], ['b1', 'bob']] as const) {
      const [verdict] = await store.admit([{ claims: [], rule, closeNow: false, part: { debounceKey: `g\u0000${sender}`, receivedAt: now, event: event(id, 'g', sender) } }], now);
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
