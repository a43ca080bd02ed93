import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/load.js';
import type { Output } from '../src/events.js';
import { createIntake } from '../src/intake.js';
import type { LeasedBatch, OutboxDraft } from '../src/ports.js';
import { MemoryStore } from '../src/store/local/memory.js';
import { deliverJson, silent, tempDir } from './helpers.js';
import { ManualClock } from './manual-clock.js';

/**
 * A store whose first commit runs and then answers as if it had not: an error (a Redis command
 * timeout), or no record (ioredis sent it again after a reconnection, and the fence it had used
 * up refused it).
 */
class AnswerLost extends MemoryStore {
  lost = 0;
  constructor(private readonly answer: 'error' | 'refused') {
    super();
  }

  override async commit(batch: LeasedBatch, draft: OutboxDraft, now: number) {
    const record = await super.commit(batch, draft, now);
    if (this.lost++ > 0) return record;
    if (this.answer === 'error') throw new Error('Command timed out');
    return undefined;
  }
}

describe('a commit that ran but lost its answer', () => {
  it.each(['error', 'refused'] as const)('publishes the output once to in-process listeners, as a commit that answered (answer: %s)', async (lostAs) => {
    const dir = tempDir();
    const clock = new ManualClock();
    const store = new AnswerLost(lostAs);
    const config = loadConfig({ env: {}, cwd: dir.path, file: { store: 'memory', logLevel: 'silent', media: { dir: 'media' }, debounce: { windowMs: 1000 } } });
    const intake = await createIntake({ config, logger: silent, cwd: dir.path, clock, store });
    const out: string[] = [];
    intake.on('chat.processedMessage', (o: Output) => { out.push((o as { content: string }).content); });
    const answer = await deliverJson(intake, { id: 'm1', sessionKey: 'cli:a', content: 'hello' }, clock.now());
    expect(answer.status).toBe(200);
    await clock.advance(2000);
    expect(store.lost).toBe(1);
    expect(out).toEqual(['hello']);
    expect((await store.outboxAfter(0, 10)).map((r) => r.messageIds)).toEqual([['m1']]);
    await intake.close();
    dir.remove();
  });
});
