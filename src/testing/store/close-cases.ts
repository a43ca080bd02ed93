import { describe, expect, it } from 'vitest';
import type { BufferRule, FlushReason } from '../../core/ports/index.js';
import { draft, item } from './fixtures.js';
import type { StoreHarness } from './harness.js';

/**
 * The debounce close rules (the cut and the deadline) as one table of cases, run against every
 * store: the TypeScript rule (memory, SQLite) and its Lua twin (Redis) give the same batches
 * at the same times. Each case is driven as the scheduler drives a store: parts are
 * admitted at their times, and a due buffer is claimed at its deadline (an arrival at the same
 * millisecond first) and committed at once.
 */

interface Part {
  at: number;
  text: string;
  /** An album's parts share a unit; default: the part itself. */
  unit?: string;
  command?: boolean;
  rule?: BufferRule;
}

interface Batch {
  at: number;
  reason: FlushReason;
  texts: string[];
}

interface Case {
  name: string;
  rule: BufferRule;
  parts: Part[];
  /** The deadline each admission answers. */
  admitted: number[];
  batches: Batch[];
}

const R: BufferRule = { windowMs: 1000, maxWaitMs: 5000, maxMessages: 3 };
const wide: BufferRule = { ...R, maxMessages: 10 };
const two: BufferRule = { ...R, maxMessages: 2 };
const p = (at: number, text: string, extra: Partial<Part> = {}): Part => ({ at, text, ...extra });

export const closeCases: Case[] = [
  {
    name: 'one part waits out the window',
    rule: R,
    parts: [p(0, 'a')],
    admitted: [1000],
    batches: [{ at: 1000, reason: 'window', texts: ['a'] }],
  },
  {
    name: 'a part inside the window moves the deadline',
    rule: R,
    parts: [p(0, 'a'), p(800, 'b')],
    admitted: [1000, 1800],
    batches: [{ at: 1800, reason: 'window', texts: ['a', 'b'] }],
  },
  {
    name: 'window and maxWait at the same time: the window',
    rule: R,
    parts: [
      p(0, 'a'),
      p(900, 'b', { unit: 'al' }),
      p(1800, 'c', { unit: 'al' }),
      p(2700, 'd', { unit: 'al' }),
      p(3600, 'e', { unit: 'al' }),
      p(4000, 'f', { unit: 'al' }),
    ],
    admitted: [1000, 1900, 2800, 3700, 4600, 5000],
    batches: [{ at: 5000, reason: 'window', texts: ['a', 'b', 'c', 'd', 'e', 'f'] }],
  },
  {
    name: 'maxWait caps a stream of parts',
    rule: wide,
    parts: [0, 900, 1800, 2700, 3600, 4500].map((at, i) => p(at, `m${i}`)),
    admitted: [1000, 1900, 2800, 3700, 4600, 5000],
    batches: [{ at: 5000, reason: 'max_wait', texts: ['m0', 'm1', 'm2', 'm3', 'm4', 'm5'] }],
  },
  {
    name: 'the unit that reaches maxMessages closes the buffer when it arrives',
    rule: R,
    parts: [p(0, 'a'), p(100, 'b'), p(200, 'c')],
    admitted: [1000, 1100, 200],
    batches: [{ at: 200, reason: 'count', texts: ['a', 'b', 'c'] }],
  },
  {
    name: 'an album counts once',
    rule: R,
    parts: [p(0, 'a', { unit: 'u' }), p(100, 'b', { unit: 'u' }), p(200, 'c', { unit: 'u' })],
    admitted: [1000, 1100, 1200],
    batches: [{ at: 1200, reason: 'window', texts: ['a', 'b', 'c'] }],
  },
  {
    name: "an album's later parts go with the part that reached the count; the next unit waits",
    rule: two,
    parts: [p(0, 'a'), p(100, 'b', { unit: 'al' }), p(100, 'c', { unit: 'al' }), p(100, 'd')],
    admitted: [1000, 100, 100, 100],
    batches: [
      { at: 100, reason: 'count', texts: ['a', 'b', 'c'] },
      { at: 1100, reason: 'window', texts: ['d'] },
    ],
  },
  {
    name: 'a command closes the buffer at once',
    rule: R,
    parts: [p(0, 'a'), p(300, '/go', { command: true })],
    admitted: [1000, 300],
    batches: [{ at: 300, reason: 'command', texts: ['a', '/go'] }],
  },
  {
    name: 'a part behind a command waits for the next batch',
    rule: R,
    parts: [p(0, 'a'), p(300, '/go', { command: true }), p(300, 'b')],
    admitted: [1000, 300, 300],
    batches: [
      { at: 300, reason: 'command', texts: ['a', '/go'] },
      { at: 1300, reason: 'window', texts: ['b'] },
    ],
  },
  {
    name: 'behind a count cut, the next count closes before a later command',
    rule: two,
    parts: [p(0, 'a'), p(0, 'b'), p(0, 'c'), p(0, 'd'), p(0, '/go', { command: true }), p(0, 'e')],
    admitted: [1000, 0, 0, 0, 0, 0],
    batches: [
      { at: 0, reason: 'count', texts: ['a', 'b'] },
      { at: 0, reason: 'count', texts: ['c', 'd'] },
      { at: 0, reason: 'command', texts: ['/go'] },
      { at: 1000, reason: 'window', texts: ['e'] },
    ],
  },
  {
    name: 'the rule of the part that opened the buffer holds until it flushes',
    rule: R,
    parts: [p(0, 'a'), p(500, 'b', { rule: { windowMs: 100, maxWaitMs: 200, maxMessages: 1 } })],
    admitted: [1000, 1500],
    batches: [{ at: 1500, reason: 'window', texts: ['a', 'b'] }],
  },
];

export function describeCloseCases(h: StoreHarness): void {
  describe('the debounce close rules, case by case', () => {
    it.each(closeCases)('$name', async (c) => {
      const store = await h.fresh();
      const admitted: number[] = [];
      const batches: Batch[] = [];
      let next = 0;
      for (let round = 0; round < 100; round++) {
        const due = await store.nextDeadline();
        const part = c.parts[next];
        if (part && (due === undefined || part.at <= due)) {
          const [verdict] = await store.admit(
            [
              item(part.text, {
                at: part.at,
                rule: part.rule ?? c.rule,
                closeNow: part.command === true,
                ...(part.unit ? { unit: part.unit } : {}),
              }),
            ],
            part.at,
          );
          admitted.push(verdict?.verdict === 'accepted' ? verdict.deadline : Number.NaN);
          next++;
          continue;
        }
        if (due === undefined) break;
        // Not due a millisecond early, due at its deadline.
        expect(await store.claimDue(due - 1, 60_000, 10)).toEqual([]);
        const taken = await store.claimDue(due, 60_000, 10);
        expect(taken).toHaveLength(1);
        const batch = taken[0]!;
        batches.push({ at: due, reason: batch.reason, texts: batch.parts.map((x) => x.event.text) });
        await store.commit(batch, draft(`out-${batches.length}`, 'none', batch.sessionKey, due), due);
      }
      expect({ admitted, batches }).toEqual({ admitted: c.admitted, batches: c.batches });
    });
  });
}
