import { describe, expect, it } from 'vitest';
import type { BufferedPart, InboundEvent } from '../../src/events/inbound.js';
import type { ProcessedMessage } from '../../src/events/output.js';
import { localLedger } from '../../src/revise/ledger.js';
import { createRevisions, revisedParts } from '../../src/revise/stage.js';
import { MemoryStore } from '../../src/store/local/memory.js';
import { event, item } from '../../src/testing/store/fixtures.js';
import { ManualClock } from '../support/manual-clock.js';

const options = { enabled: true, maxPerSession: 10, ttlMs: 60_000 };

function part(id: string, text = id): BufferedPart {
  return { id, debounceKey: 's', receivedAt: 0, event: { ...event(text), platformId: id } };
}

/** A recall (or an edit to `text`) of message `messageId` in session `s`. */
function revising(messageId: string, text?: string): InboundEvent {
  const base = { ...event(text ?? 'recalled'), kind: text === undefined ? 'notice' : 'message' } as InboundEvent;
  return { ...base, revises: { kind: text === undefined ? 'recall' : 'edit', messageId, senderId: 'u' } };
}

/** An emitted output of session `s` whose one part is `messageId`, delivered by two bots. */
function output(messageId: string): Omit<ProcessedMessage, 'seq'> {
  return {
    type: 'chat.processedMessage',
    id: 'out-1',
    sessionKey: 's',
    channel: 'c',
    sourceChannel: 'generic',
    context: [{ messageId: 'ctx-1', sender: { id: 'v' }, content: 'earlier', timestamp: 1, media: [] }],
    parts: [
      {
        messageId,
        timestamp: 1,
        senderId: 'u',
        bots: [
          { channel: 'c', botId: 'A', messageId: '100' },
          { channel: 'c', botId: 'B', messageId: '50100' },
        ],
      },
    ],
  } as unknown as Omit<ProcessedMessage, 'seq'>;
}

describe('revised parts', () => {
  it('leaves a batch no revision names as it is, the same array', () => {
    const parts = [part('a'), part('b')];
    expect(revisedParts(parts, undefined).parts).toBe(parts);
    expect(revisedParts(parts, [{ kind: 'recall', messageId: 'zzz', at: 0 }]).parts).toBe(parts);
  });

  it('takes recalled parts out and gives edited ones their new text, in order', () => {
    const parts = [part('a'), part('b'), part('c')];
    const { parts: left, recalled } = revisedParts(parts, [
      { kind: 'recall', messageId: 'b', at: 0 },
      { kind: 'edit', messageId: 'c', at: 0, content: 'C!' },
    ]);
    expect(left.map((p) => p.event.text)).toEqual(['a', 'C!']);
    expect(recalled.map((p) => p.id)).toEqual(['b']);
    // the buffered part itself is not changed
    expect(parts[2]!.event.text).toBe('c');
  });
});

describe('the revision stage', () => {
  const clock = new ManualClock(1_000_000);

  it('finds a message waiting in its sender’s buffer, and says a second report is one already recorded', async () => {
    const store = new MemoryStore();
    const revisions = createRevisions({ clock, store, ledger: localLedger(1000), options });
    await store.admit([item('m1', { at: clock.now() })], clock.now());
    expect(await revisions.revise(revising('m1'), ['s'])).toEqual({ verdict: 'applied', where: 'buffer' });
    expect(await revisions.revise(revising('m1'), ['s'])).toEqual({ verdict: 'already' });
    expect(await revisions.revise(revising('m1', 'too late'), ['s'])).toEqual({ verdict: 'already' });
  });

  it('lets a recall or an edit of an unknown message go on, and tells one of an emitted message as an output of its own', async () => {
    const store = new MemoryStore();
    const revisions = createRevisions({ clock, store, ledger: localLedger(1000), options });
    expect(await revisions.revise(revising('nobody'), ['s'])).toEqual({ verdict: 'unknown' });
    await revisions.emitted(output('A:100'));
    // by its id, or the other bot's
    for (const id of ['A:100', 'B:50100']) {
      const outcome = await revisions.revise(revising(id, `edited ${id}`), ['s']);
      expect(outcome.verdict).toBe('emitted');
      const thought = (outcome as { thought: InboundEvent }).thought;
      expect(thought).toMatchObject({ kind: 'notice', detail: 'chat.edited', channel: 'c', sessionKey: 's' });
      expect(thought.fields).toMatchObject({ output_id: 'out-1', message_id: 'A:100', content: `edited ${id}` });
    }
    const recalled = await revisions.revise(revising('B:50100'), ['s']);
    const again = await revisions.revise(revising('A:100'), ['s']);
    // two bots' reports of one recall: the same once-key, so admission takes one
    expect((recalled as { thought: InboundEvent }).thought.platformId).toBe('retracted:out-1:A:100');
    expect((again as { thought: InboundEvent }).thought.platformId).toBe('retracted:out-1:A:100');
  });

  it('tells a recall of a message an output carried as context as that output’s', async () => {
    const store = new MemoryStore();
    const revisions = createRevisions({ clock, store, ledger: localLedger(1000), options });
    await revisions.emitted(output('A:100'));
    const outcome = await revisions.revise(revising('ctx-1'), ['s']);
    expect((outcome as { thought: InboundEvent }).thought.fields).toMatchObject({
      output_id: 'out-1',
      message_id: 'ctx-1',
    });
  });

  it('does nothing when off', async () => {
    const store = new MemoryStore();
    const revisions = createRevisions({
      clock,
      store,
      ledger: localLedger(1000),
      options: { ...options, enabled: false },
    });
    await store.admit([item('m1', { at: clock.now() })], clock.now());
    expect(await revisions.revise(revising('m1'), ['s'])).toEqual({ verdict: 'unknown' });
    expect((await store.conversation('s', clock.now())).revisions).toBeUndefined();
  });
});
