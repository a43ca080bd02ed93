import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';
import { createIntake } from '../../src/service/intake.js';
import { MemoryStore } from '../../src/store/local/memory.js';
import { deliverJson, tempDir } from '../support/helpers.js';
import { silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';

/** A store whose trims wait until the test lets them finish, counting how many run at once. */
class SlowTrim extends MemoryStore {
  calls = 0;
  running = 0;
  most = 0;
  private readonly waiting: Array<() => void> = [];

  override async trimOutbox(olderThan: number, keepCount: number, keepAfterSeq: number): Promise<number> {
    this.calls++;
    this.most = Math.max(this.most, ++this.running);
    await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running--;
    return super.trimOutbox(olderThan, keepCount, keepAfterSeq);
  }

  finishOne(): boolean {
    const next = this.waiting.shift();
    next?.();
    return next !== undefined;
  }
}

describe('the outbox trim', () => {
  it('runs one trim at a time, and once more after it when more output asked for one meanwhile', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const store = new SlowTrim();
    const config = loadConfig({
      env: {},
      cwd: dir.path,
      file: {
        store: 'memory',
        logLevel: 'silent',
        media: { dir: 'media' },
        debounce: { windowMs: 1000 },
        events: { retentionCount: 50 },
      },
    });
    const intake = await createIntake({ config, logger: silent, cwd: dir.path, clock, store });
    // 350 outputs: the count asks for a trim every 100 (the least step), three times, while the
    // first one still runs.
    for (let i = 0; i < 350; i++)
      expect(
        (await deliverJson(intake, { id: `m${i}`, sessionKey: `s${i}`, content: `hello ${i}` }, clock.now())).status,
      ).toBe(200);
    await clock.advance(2000);
    // The flushes run a slice at a time, a turn each.
    for (let i = 0; i < 500 && (await store.outboxAfter(0, 1000)).length < 350; i++)
      await new Promise((resolve) => setImmediate(resolve));
    expect((await store.outboxAfter(0, 1000)).length).toBe(350);
    expect(store.calls).toBe(1);
    store.finishOne();
    // The one asked for meanwhile runs after it, alone, with the newest positions.
    for (let i = 0; i < 20 && store.calls < 2; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(store.calls).toBe(2);
    store.finishOne();
    for (let i = 0; i < 20 && store.running > 0; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(store.most).toBe(1);
    expect(store.calls).toBe(2);
    expect((await store.outboxAfter(0, 1000)).length).toBe(50);
    await intake.close();
    dir.remove();
  });
});
