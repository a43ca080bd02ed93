import { describe, expect, it } from 'vitest';
import { flushGridMs } from '../../src/debounce/grid.js';
import { createIntake } from '../../src/service/intake.js';
import { loadConfig } from '../../src/service/configure.js';
import type { Output } from '../../src/events/output.js';
import { ManualClock } from '../support/manual-clock.js';
import { deliverJson, tempDir } from '../support/helpers.js';
import { silent } from '../support/logger.js';

describe('flushGridMs', () => {
  it('is a twentieth of the shortest hold, between 10 and 50 ms', () => {
    expect(flushGridMs([1500, 1000])).toBe(50); // the defaults: debounce window, notice hold
    expect(flushGridMs([1500, 1000, 600])).toBe(30); // a channel with a shorter window
    expect(flushGridMs([5000, 4000])).toBe(50);
    expect(flushGridMs([0, 1000])).toBe(10); // windowMs 0: as soon as the 10 ms grid allows
  });
});

describe('the flush grid with the default holds', () => {
  it('closes a buffer at the first 50 ms grid point after its deadline, not before', async () => {
    const dir = tempDir();
    // 20 ms past a grid point: the deadline (start + 1500) is too, and rounds up by 30 ms.
    const clock = new ManualClock(1_700_000_000_020);
    const config = loadConfig({
      env: {},
      cwd: dir.path,
      file: { store: 'memory', logLevel: 'silent', media: { dir: 'media' } },
    });
    const intake = await createIntake({ config, logger: silent, cwd: dir.path, clock });
    const out: string[] = [];
    intake.on('chat.processedMessage', (o: Output) => {
      out.push((o as { content: string }).content);
    });
    const response = await deliverJson(intake, { id: 'g1', sessionKey: 'cli:grid', content: 'hello' }, clock.now());
    expect(response.status).toBe(200);
    await clock.advance(1_500 + 29);
    expect(out).toEqual([]);
    await clock.advance(1);
    expect(out).toEqual(['hello']);
    await intake.close();
    dir.remove();
  });
});
