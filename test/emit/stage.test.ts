import { describe, expect, it } from 'vitest';
import { createOutput } from '../../src/emit/stage.js';
import type { InboundEvent } from '../../src/events/inbound.js';
import type { LeasedBatch, OutboxDraft } from '../../src/core/ports/index.js';
import { ManualClock } from '../support/manual-clock.js';

const event = (id: string): InboundEvent => ({
  id,
  kind: 'message',
  channel: 'c',
  adapter: 'generic',
  namespace: 'c',
  conversation: { type: 'private', id: 's' },
  sessionKey: 's',
  sender: { id: 'u' },
  segments: [],
  text: id,
  media: [],
  mentions: [],
  timestamp: 1,
  raw: undefined,
});
const batch = (ids: string[], receivedAt = 5000, fence = 1): LeasedBatch => ({
  debounceKey: 'c/s',
  sessionKey: 's',
  fence,
  leaseUntil: 0,
  reason: 'window',
  parts: ids.map((id, i) => ({ id: String(i + 1), debounceKey: 'c/s', receivedAt: receivedAt + i, event: event(id) })),
});

function stage(clock: ManualClock, drafts: OutboxDraft[]) {
  return createOutput({
    clock,
    pushes: true,
    store: {
      commitTurn: async (leased, draft) => {
        drafts.push(draft);
        return { held: false, record: { ...draft, seq: drafts.length, attempts: 0, updatedAt: 0 } };
      },
      commit: async (leased, draft) => {
        drafts.push(draft);
        return { ...draft, seq: drafts.length, attempts: 0, updatedAt: 0 };
      },
      correlation: async () => undefined,
    },
    rules: {
      turnsOf: () => ({ mode: 'off', maxMs: 120_000, maxHeld: 20 }),
      debounceOf: () => ({ media: 'all' }),
      namespaceOf: () => 'c',
    },
    media: { collect: async () => [], keep: () => undefined },
    bots: { mentionedBots: () => [], isOwnBot: () => false, learn: () => undefined },
    soloRecord: () => {
      throw new Error('not a notice');
    },
    botsOf: () => [],
    pickReplyBot: () => ({ channel: 'c' }),
    replyTo: () => undefined,
  });
}

describe('output stage', () => {
  it('gives a batch emitted again (the store lost its first commit: a failover to a lagging replica) the same output id, so the agent can dedup on webhook-id', async () => {
    const clock = new ManualClock(10_000);
    const drafts: OutboxDraft[] = [];
    const output = stage(clock, drafts);
    await output(batch(['m1', 'm2']));
    await clock.advance(30_000); // re-flushed later, by another instance (another fence)
    await output(batch(['m1', 'm2'], 5000, 7));
    expect(drafts[1]!.id).toBe(drafts[0]!.id);
    expect(JSON.parse(drafts[1]!.body).id).toBe(drafts[0]!.id);
    // Other parts, or the same ids arriving another time (a platform's retry past its dedup window), are another output.
    await output(batch(['m1']));
    await output(batch(['m1', 'm2'], 9000));
    expect(new Set(drafts.map((draft) => draft.id)).size).toBe(3);
    for (const draft of drafts) expect(draft.id).toMatch(/^[-0-9A-Z_a-z]{21}$/);
  });
});
