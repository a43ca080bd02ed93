import { describe, expect, it } from 'vitest';
import type { OutboxRecord } from '../../../src/core/ports/index.js';
import { committedDespiteLostAnswer } from '../../../src/store/redis/lost-answer.js';

const record = { id: 'o1', seq: 7 } as OutboxRecord;

/** A logger that keeps what it was told. */
function logger() {
  const lines: string[] = [];
  return {
    lines,
    warn: (_obj: object, msg: string) => {
      lines.push(msg);
    },
  };
}

describe('a Redis commit that ran but lost its answer', () => {
  it.each([
    [
      'an error (a command timeout)',
      async () => {
        throw new Error('Command timed out');
      },
    ],
    ['no record (resent after a reconnection, refused by its used fence)', async () => undefined],
  ])('answers with the record the outbox holds when the answer was %s, and says so', async (_lost, commit) => {
    const log = logger();
    expect(await committedDespiteLostAnswer(commit, async () => record, log, 'cli:a')).toBe(record);
    expect(log.lines).toEqual(['flush commit answered late or failed, but its output is in the outbox; published']);
  });

  it('passes a commit that answered through without reading the outbox', async () => {
    let read = 0;
    expect(
      await committedDespiteLostAnswer(
        async () => record,
        async () => {
          read++;
          return undefined;
        },
        undefined,
        'cli:a',
      ),
    ).toBe(record);
    expect(read).toBe(0);
  });

  it('throws the error of a commit that did not run, and answers undefined for a stale fence', async () => {
    const log = logger();
    await expect(
      committedDespiteLostAnswer(
        async () => {
          throw new Error('Connection is closed');
        },
        async () => undefined,
        log,
        'cli:a',
      ),
    ).rejects.toThrow('Connection is closed');
    expect(
      await committedDespiteLostAnswer(
        async () => undefined,
        async () => undefined,
        log,
        'cli:a',
      ),
    ).toBeUndefined();
    // An outbox that cannot be read either leaves the first failure standing.
    await expect(
      committedDespiteLostAnswer(
        async () => {
          throw new Error('timed out');
        },
        async () => {
          throw new Error('down');
        },
        log,
        'cli:a',
      ),
    ).rejects.toThrow('timed out');
    expect(log.lines).toEqual([]);
  });
});
