import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivation } from '../../src/activation/stage.js';
import { reachDefaults, type ActivationMode } from '../../src/config/activation.js';
import type { ConversationRead, LeasedBatch } from '../../src/core/ports/index.js';
import { MemoryStore } from '../../src/store/local/memory.js';
import { item } from '../../src/testing/store/fixtures.js';
import { contextMessage } from '../../src/testing/store/conversations.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { tempDir } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';

const keep = { maxMessages: 50, ttlMs: 3_600_000 };

/** A group `g` in `group` mode with the wake word `bot`, over a memory store whose conversation reads are listed. */
function groupIn(group: ActivationMode, ours: ReadonlySet<string> = new Set()) {
  const clock = new ManualClock(1_000_000);
  const store = new MemoryStore();
  const reads: Array<ConversationRead | undefined> = [];
  const activation = createActivation({
    clock,
    store: {
      conversation: (sessionKey, now, read) => {
        reads.push(read);
        return store.conversation(sessionKey, now, read);
      },
      keepContext: (batch, messages, now, kept) => store.keepContext(batch, messages, now, kept),
      spendBudgets: (spends, now) => store.spendBudgets(spends, now),
      deferBatch: (batch, deferKey, dueAt, now) => store.deferBatch(batch, deferKey, dueAt, now),
    },
    rulesOf: () => ({
      activation: { ...reachDefaults.activation, group, wakeWords: ['bot'] },
      context: reachDefaults.context,
      budgets: [],
    }),
    bots: { isOwnBot: (_namespace, id) => ours.has(id) },
    sent: { remember: async () => {}, rememberEcho: async () => {}, has: async () => undefined },
  });

  /** One member's message in the group, marked as it arrives, flushed as a batch of its own. */
  async function say(text: string, mentions: string[] = []): Promise<LeasedBatch> {
    const now = clock.now();
    await store.admit([item(text, { sessionKey: 'g', debounceKey: `g/${text}`, at: now, closeNow: true })], now);
    const [batch] = await store.claimDue(now, 1000, 1);
    if (!batch) throw new Error(`nothing due for ${text}`);
    for (const part of batch.parts) {
      part.event.conversation = { type: 'group', id: 'g' };
      if (mentions.length > 0) part.event.mentions = mentions;
    }
    await activation.mark(batch.parts.map((part) => part.event));
    clock.tick(1000);
    return batch;
  }

  return { activation, store, reads, say };
}

describe('activation deciding a batch', () => {
  it('keeps a mention-mode batch that addresses no bot from the override alone, never reading the context', async () => {
    const { activation, reads, say } = groupIn('mention');
    for (const text of ['hello all', 'how are you']) {
      const batch = await say(text);
      expect(await activation.decide(batch)).toMatchObject({ addressed: false });
      expect(await activation.keep(batch)).toBe(true);
    }
    expect(reads).toEqual([{ context: false }, { context: false }]);
  });

  it('reads the context for a batch that addresses the bots, and carries it', async () => {
    const { activation, reads, say } = groupIn('mention');
    const chatter = await say('hello all');
    await activation.decide(chatter);
    await activation.keep(chatter);
    const decision = await activation.decide(await say('bot what is the weather'));
    expect(decision).toMatchObject({ addressed: true, trigger: 'wake' });
    expect(decision.addressed && decision.context.map((message) => message.content)).toEqual(['hello all']);
    expect(reads).toEqual([{ context: false }, undefined]);
  });

  it('lets a batch through with its context when an override set at run time says always', async () => {
    const { activation, store, reads, say } = groupIn('mention');
    const chatter = await say('hello all');
    await activation.decide(chatter);
    await activation.keep(chatter);
    await store.setActivation('g', { group: 'always' }, 0);
    const decision = await activation.decide(await say('how are you'));
    expect(decision).toMatchObject({ addressed: true, trigger: 'always' });
    expect(decision.addressed && decision.context.map((message) => message.content)).toEqual(['hello all']);
    expect(reads).toEqual([{ context: false }, { context: false }, undefined]);
  });

  it('lets a batch through whose mention names a bot first known at flush, with the trigger mention', async () => {
    const ours = new Set<string>();
    const { activation, say } = groupIn('mention', ours);
    const batch = await say('look at this', ['b2']);
    expect(batch.parts[0]!.event.addressed).toBe(false);
    ours.add('b2');
    expect(await activation.decide(batch)).toMatchObject({ addressed: true, trigger: 'mention' });
  });

  it('reads the conversation once, context and all, in a group configured always', async () => {
    const { activation, reads, say } = groupIn('always');
    // kept while the group was in mention mode
    await activation.keep(await say('hello all'));
    const decision = await activation.decide(await say('how are you'));
    expect(decision).toMatchObject({ addressed: true, trigger: 'always' });
    expect(decision.addressed && decision.context.map((message) => message.content)).toEqual(['hello all']);
    expect(reads).toEqual([undefined]);
  });

  it('decides by the conversation the claim brought with the batch, reading none', async () => {
    const { activation, reads, say } = groupIn('mention');
    const chatter = await say('hello all');
    chatter.conversation = { state: { context: [], dropped: 0 }, keepsContext: false };
    expect(await activation.decide(chatter)).toMatchObject({ addressed: false });
    const batch = await say('how are you');
    batch.conversation = { state: { context: [], dropped: 0, activation: { group: 'always' } }, keepsContext: false };
    expect(await activation.decide(batch)).toMatchObject({ addressed: true, trigger: 'always', context: [] });
    expect(reads).toEqual([]);
  });

  it('reads the context for a batch that goes out when the claim says the session keeps some', async () => {
    const { activation, reads, say } = groupIn('mention');
    await activation.keep(await say('hello all'));
    const batch = await say('bot what is the weather');
    batch.conversation = { state: { context: [], dropped: 0 }, keepsContext: true };
    const decision = await activation.decide(batch);
    expect(decision.addressed && decision.context.map((message) => message.content)).toEqual(['hello all']);
    expect(reads).toEqual([undefined]);
  });
});

describe.each([
  ['memory', () => new MemoryStore()],
  ['sqlite', () => new SqliteStore(join(tempDir().path, 'store.db'), { now: 0 })],
])('the %s store asked for the override alone', (_name, open) => {
  it('leaves the context out and gives the override', async () => {
    const store = open();
    await store.admit([item('hello all', { sessionKey: 'g', at: 0, closeNow: true })], 0);
    const [batch] = await store.claimDue(0, 1000, 1);
    await store.keepContext(batch as LeasedBatch, [contextMessage('hello all')], 0, keep);
    await store.setActivation('g', { group: 'never' }, 0);
    expect(await store.conversation('g', 10, { context: false })).toEqual({
      context: [],
      dropped: 0,
      activation: { group: 'never' },
    });
    expect((await store.conversation('g', 10)).context.map((entry) => entry.message.messageId)).toEqual(['hello all']);
    await store.close();
  });
});
