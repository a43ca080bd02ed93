import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { loadConfig } from '../../src/config/load.js';
import { MediaStage } from '../../src/media/index.js';
import { Metrics } from '../../src/metrics/index.js';
import { silent, tempDir } from '../helpers.js';

describe('MediaStage sweeper', () => {
  it('keeps what the service used within ttlMs by its own clock, and sweeps the rest', async () => {
    const dir = tempDir().path;
    const config = loadConfig({ env: {}, file: { media: { dir: 'media', ttlMs: 1000 } } });
    let now = Date.UTC(2031, 0, 1);
    const clock: Clock = { now: () => now, setTimeout: () => 0, clearTimeout: () => {} };
    const stage = new MediaStage({
      cwd: dir, channels: ['generic'], concurrency: 1, clock, logger: silent, metrics: new Metrics({ defaultMetrics: false }),
      optionsFor: () => config.media, adapterFor: () => undefined,
    });
    mkdirSync(join(dir, 'media', 's'), { recursive: true });
    for (const name of ['used.png', 'unused.png']) {
      writeFileSync(join(dir, 'media', 's', name), 'x');
      utimesSync(join(dir, 'media', 's', name), new Date(now), new Date(now));
    }
    now += 900;
    await stage.touch([{ type: 'image', path: 'media/s/used.png', mime: 'image/png', bytes: 1, sha256: '' }]);
    now += 200;
    expect(await stage.sweep()).toEqual({ files: 1, folders: 0 });
    expect(existsSync(join(dir, 'media', 's', 'used.png'))).toBe(true);
    expect(existsSync(join(dir, 'media', 's', 'unused.png'))).toBe(false);
    now += 1000;
    expect(await stage.sweep()).toEqual({ files: 1, folders: 1 });
    await stage.close();
  });
});
