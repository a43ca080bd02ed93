import { describe, expect, it } from 'vitest';
import { contextMessage, contextOf } from '../../src/activation/stage.js';
import type { KeptMessage } from '../../src/events/context.js';
import type { InboundEvent } from '../../src/events/inbound.js';

const kept = (seq: number, at: number, content: string): KeptMessage => ({
  seq,
  at,
  message: { messageId: `m${seq}`, sender: { id: 'u' }, content, timestamp: at / 1000, media: [] },
});
const limits = { maxMessages: 50, maxAgeMs: 60_000, maxChars: 10 };

describe('the context an output carries', () => {
  it('is every kept message, oldest first, clearing up to the last one read', () => {
    const state = { context: [kept(1, 1_000, 'a'), kept(2, 2_000, 'b')], dropped: 0 };
    const out = contextOf(state, limits, 3_000);
    expect(out.context.map((m) => m.messageId)).toEqual(['m1', 'm2']);
    expect(out).toMatchObject({ contextDropped: 0, contextUpTo: 2 });
  });

  it('leaves out messages past maxAgeMs and the oldest past maxChars, counting them with those trimmed in the store', () => {
    const state = {
      context: [kept(1, 0, 'old'), kept(2, 50_000, 'abcdef'), kept(3, 55_000, 'ghij'), kept(4, 56_000, 'kl')],
      dropped: 3,
    };
    const out = contextOf(state, limits, 70_000);
    // 'kl' + 'ghij' = 6 characters; 'abcdef' would make 12 > 10; 'old' is 70 s old.
    expect(out.context.map((m) => m.content)).toEqual(['ghij', 'kl']);
    expect(out.contextDropped).toBe(5);
    expect(out.contextUpTo).toBe(4);
  });

  it('cuts the newest message to fit when it alone is longer than maxChars, leaving the older ones out', () => {
    const state = { context: [kept(1, 1_000, 'short'), kept(2, 2_000, 'x'.repeat(25))], dropped: 0 };
    const out = contextOf(state, limits, 3_000);
    expect(out.context.map((m) => m.content)).toEqual([`${'x'.repeat(9)}…`]);
    expect(out).toMatchObject({ contextDropped: 1, contextUpTo: 2 });
  });

  it('is empty, clearing nothing, when nothing is kept', () => {
    expect(contextOf({ context: [], dropped: 2 }, limits, 0)).toEqual({ context: [], contextDropped: 2, kept: [] });
  });
});

describe('a message as context', () => {
  it('keeps its text, sender and attachments by reference, never downloading them', () => {
    const event = {
      id: 'x',
      platformId: 'p1',
      sender: { id: 'u1', name: 'Ann' },
      text: 'look',
      timestamp: 5,
      media: [{ url: 'https://cdn.example/a.png', type: 'image' }, { ref: 'file-1' }, {}],
    } as unknown as InboundEvent;
    expect(contextMessage(event)).toEqual({
      messageId: 'p1',
      sender: { id: 'u1', name: 'Ann' },
      content: 'look',
      timestamp: 5,
      media: [
        { type: 'image', ref: 'https://cdn.example/a.png' },
        { type: 'document', ref: 'file-1' },
      ],
    });
  });
});
