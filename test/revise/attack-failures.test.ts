import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AdmitItem, AdmitVerdict } from '../../src/core/ports/index.js';
import { MemoryStore } from '../../src/store/local/memory.js';
import { startService, tempDir, until } from '../support/helpers.js';
import { A, B, Harness, channels, recall } from './attack-support.js';

/*
 * Recalls (contract §13) when the store fails or is slow at the wrong moment, and across a
 * restart of a store that lasts: a recall of an emitted message must still be told, once.
 */

/** A memory store whose admission of a second thought fails the first time. */
class FailingOnce extends MemoryStore {
  failed = false;
  override async admit(items: readonly AdmitItem[], now: number): Promise<AdmitVerdict[]> {
    if (!this.failed && items.some((item) => item.part.event.detail === 'chat.retracted')) {
      this.failed = true;
      throw new Error('the store is away for a moment');
    }
    return super.admit(items, now);
  }
}

/** A memory store whose shared values are written only when the test lets them. */
class SlowLedger extends MemoryStore {
  private gate: Promise<void> | undefined;
  open: () => void = () => undefined;
  hold(): void {
    this.gate = new Promise((resolve) => (this.open = resolve));
  }
  override async sharedPut(name: string, value: string, ttlMs: number, now: number): Promise<void> {
    if (this.gate && name.startsWith('emitted:')) await this.gate;
    return super.sharedPut(name, value, ttlMs, now);
  }
}

describe('recalls when the store fails or restarts', () => {
  let h: Harness;
  afterEach(async () => {
    await h?.stop();
  });

  /** The harness on a store of the test's own. */
  async function startOn(store: MemoryStore): Promise<Harness> {
    const harness = new Harness();
    harness.service = await startService(
      { store: 'memory', debounce: { windowMs: 1000, maxWaitMs: 3000 }, channels },
      { clock: harness.clock, store },
    );
    return harness;
  }

  // The recall is recorded before its chat.retracted is admitted: when the admission fails
  // (the webhook answers 5xx) the platform sends the recall again, which finds it recorded
  // ("already") and tells nothing, so the retraction is never told. (A second bot's report
  // names the message by its own id, a revision of its own: it would still tell it. Here the
  // one bot that reports it retries.)
  it('tells the retraction of a recall whose first delivery failed when the platform retries it', async () => {
    const store = new FailingOnce();
    h = await startOn(store);
    await h.say(1, 7, 'a secret');
    await h.flushed();
    expect(await h.ofType('chat.processedMessage')).toHaveLength(1);
    expect(await h.post(recall(A, 1, 7))).toBeGreaterThanOrEqual(500);
    expect(store.failed).toBe(true);
    await h.postOk(recall(A, 1, 7));
    await h.flushed(2000);
    expect(await h.ofType('chat.retracted')).toHaveLength(1);
  });

  it('tells the retraction of a recall whose first delivery failed once another bot reports it', async () => {
    const store = new FailingOnce();
    h = await startOn(store);
    await h.say(1, 7, 'a secret');
    await h.flushed();
    expect(await h.post(recall(A, 1, 7))).toBeGreaterThanOrEqual(500);
    await h.postOk(recall(A, 1, 7));
    await h.postOk(recall(B, 1, 7));
    await h.flushed(2000);
    expect(await h.ofType('chat.retracted')).toHaveLength(1);
  });

  // The ledger of emitted ids is written after the commit, in a step of its own: a recall that
  // comes between the two finds the message nowhere and goes on as a plain group_recall notice.
  it('tells a recall that arrives after the commit and before the emitted ids are remembered', async () => {
    const store = new SlowLedger();
    h = await startOn(store);
    store.hold();
    await h.say(1, 7, 'just out');
    await h.clock.advance(1100);
    await until(async () => (await h.ofType('chat.processedMessage')).length === 1);
    await h.postOk(recall(A, 1, 7));
    store.open();
    await h.flushed(2000);
    expect(await h.ofType('chat.notice')).toEqual([]);
    expect(await h.ofType('chat.retracted')).toHaveLength(1);
  });

  describe('on SQLite, across a restart', () => {
    const dirs: Array<{ remove(): void }> = [];
    afterEach(async () => {
      await h?.stop();
      for (const dir of dirs.splice(0)) dir.remove();
    });
    const sqlite = (dir: string) => ({ store: `sqlite:${join(dir, 'intake.db')}` });

    // The ids of emitted messages live in the process on a store of one process (a row per id
    // cost SQLite more than the message: docs/configuration.md, revisions.ttlMs): after a
    // restart the recall of a message emitted before it is the notice it was before.
    it('tells the recall of a message emitted before a restart as one notice, and never emits the message again', async () => {
      const dir = tempDir();
      dirs.push(dir);
      h = await new Harness().start(sqlite(dir.path), dir.path);
      await h.say(1, 7, 'said before the restart');
      await h.flushed();
      const [message] = await h.ofType('chat.processedMessage');
      await h.stop();
      h = await new Harness().start(sqlite(dir.path), dir.path);
      await h.postOk(recall(B, 1, 7));
      await h.postOk(recall(A, 1, 7));
      await h.flushed(2000);
      expect(await h.ofType('chat.retracted')).toEqual([]);
      expect((await h.ofType('chat.notice')).map((notice) => 'detail' in notice && notice.detail)).toEqual([
        'group_recall',
      ]);
      expect((await h.ofType('chat.processedMessage')).map((output) => output.id)).toEqual([message!.id]);
    });

    it('still holds back, after a restart, a message whose recall came before it', async () => {
      const dir = tempDir();
      dirs.push(dir);
      h = await new Harness().start(sqlite(dir.path), dir.path);
      await h.postOk(recall(A, 3, 7));
      await h.flushed();
      await h.stop();
      h = await new Harness().start(sqlite(dir.path), dir.path);
      await h.say(3, 7, 'late copy');
      await h.flushed();
      expect(await h.ofType('chat.processedMessage')).toEqual([]);
    });

    it('never emits a message recalled while it waited, the restart coming before its flush', async () => {
      const dir = tempDir();
      dirs.push(dir);
      h = await new Harness().start(sqlite(dir.path), dir.path);
      await h.say(4, 7, 'recalled in its window');
      await h.postOk(recall(A, 4, 7));
      // Stopping flushes what waits: the recall applies there, or after the restart.
      await h.stop();
      h = await new Harness().start(sqlite(dir.path), dir.path);
      await h.flushed(4000);
      expect(await h.ofType('chat.processedMessage')).toEqual([]);
    });
  });
});
