import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/local/memory.js';
import type { AdmitItem, AdmitVerdict } from '../../src/core/ports/index.js';
import { createIntake, type Intake } from '../../src/service/intake.js';
import { loadConfig } from '../../src/service/configure.js';
import { until } from '../support/helpers.js';
import { silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';

/** A store that can be switched off, like a database that went away. */
class FlakyStore extends MemoryStore {
  down = false;
  /** Reads work, writes fail: a full disk or a read-only file. */
  full = false;
  override async admit(items: readonly AdmitItem[], now: number): Promise<AdmitVerdict[]> {
    if (this.down) throw new Error('connection refused');
    if (this.full) throw new Error('SQLITE_FULL: database or disk is full');
    return super.admit(items, now);
  }
  override async ping(): Promise<void> {
    if (this.down) throw new Error('connection refused');
  }
}

describe('an unreachable store', () => {
  let intake: Intake;
  afterEach(async () => intake?.close());

  it('answers 503 with Retry-After, records nothing, reports not ready, and takes the retry once it is back', async () => {
    const store = new FlakyStore();
    intake = await createIntake({
      config: loadConfig({ env: {}, file: { store: 'memory', debounce: { windowMs: 20, maxMessages: 1 } } }),
      store,
      logger: silent,
    });
    const server = intake.app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const post = () =>
      fetch(`${url}/webhooks/generic`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'm1', sessionKey: 'cli:z', content: 'hello' }),
      });
    const outputs: string[] = [];
    intake.on('chat.processedMessage', (m) => {
      outputs.push(m.content);
    });

    store.down = true;
    const refused = await post();
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(((await refused.json()) as any).error.code).toBe('store_unavailable');
    expect((await fetch(`${url}/readyz`)).status).toBe(503);

    store.down = false;
    const retried = await post();
    expect(((await retried.json()) as any).events).toEqual([{ id: 'm1', verdict: 'accepted' }]);
    await until(() => outputs.length === 1);
    expect(outputs).toEqual(['hello']);
    server.close();
  });

  it('fails readiness while writes fail even though the store still answers reads', async () => {
    const store = new FlakyStore();
    const clock = new ManualClock();
    intake = await createIntake({
      config: loadConfig({ env: {}, file: { store: 'memory' } }),
      store,
      logger: silent,
      clock,
    });
    const server = intake.app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    store.full = true;
    const refused = await fetch(`${url}/webhooks/generic`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sessionKey: 'cli:z', content: 'hello' }),
    });
    expect(refused.status).toBe(503);
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as any).problems.join(' ')).toMatch(/SQLITE_FULL/);
    // After the Retry-After, readiness lets traffic try again.
    await clock.advance(5_000);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    server.close();
  });
});
