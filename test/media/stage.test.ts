import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/core/clock.js';
import { loadConfig } from '../../src/service/configure.js';
import { MediaStage } from '../../src/media/index.js';
import { Metrics } from '../../src/metrics/index.js';
import { tempDir, until } from '../support/helpers.js';
import { recordingLogger, silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';
import { PNG, serve } from '../support/servers.js';
import { partOf } from './parts.js';

describe('MediaStage sweeper', () => {
  it('keeps what the service used within ttlMs by its own clock, and sweeps the rest', async () => {
    const dir = tempDir().path;
    const config = loadConfig({ env: {}, file: { media: { dir: 'media', ttlMs: 1000 } } });
    let now = Date.UTC(2031, 0, 1);
    const clock: Clock = {
      now: () => now,
      setTimeout: () => 0,
      clearTimeout: () => {},
      setInterval: () => 0,
      clearInterval: () => {},
    };
    const stage = new MediaStage({
      cwd: dir,
      channels: { ids: () => ['generic'], mediaOf: () => config.media, adapterOf: () => undefined },
      concurrency: 1,
      clock,
      logger: silent,
      metrics: new Metrics({ defaultMetrics: false }),
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

describe('MediaStage sweeper on the injected clock', () => {
  it('sweeps every media.sweepIntervalMs of the clock it is given, and arms nothing once closed', async () => {
    const dir = tempDir().path;
    const config = loadConfig({ env: {}, file: { media: { dir: 'media', ttlMs: 1000, sweepIntervalMs: 3_600_000 } } });
    const clock = new ManualClock(Date.UTC(2031, 0, 1));
    const stage = new MediaStage({
      cwd: dir,
      channels: { ids: () => ['generic'], mediaOf: () => config.media, adapterOf: () => undefined },
      concurrency: 1,
      clock,
      logger: silent,
      metrics: new Metrics({ defaultMetrics: false }),
    });
    const file = join(dir, 'media', 's', 'old.png');
    mkdirSync(join(dir, 'media', 's'), { recursive: true });
    writeFileSync(file, 'x');
    utimesSync(file, new Date(clock.now()), new Date(clock.now()));
    await stage.start();
    expect(clock.pending()).toEqual([3_600_000]);
    await clock.advance(3_599_999);
    expect(existsSync(file)).toBe(true);
    await clock.advance(1);
    await until(() => !existsSync(file));
    await stage.close();
    expect(clock.pending()).toEqual([]);
  });
});

describe('MediaStage on a media folder it cannot write', () => {
  it('warns at start, and reports each attachment as a disk error without fetching it', async () => {
    const host = await serve((_req, res) => res.end(PNG));
    const dir = tempDir().path;
    writeFileSync(join(dir, 'not-a-folder'), 'x');
    const config = loadConfig({
      env: {},
      file: { media: { dir: 'not-a-folder/media', allowHosts: [`127.0.0.1:${host.port}`] } },
    });
    const { logger, lines: warnings } = recordingLogger('warn');
    const metrics = new Metrics({ defaultMetrics: false });
    const stage = new MediaStage({
      cwd: dir,
      channels: { ids: () => ['generic'], mediaOf: () => config.media, adapterOf: () => undefined },
      concurrency: 1,
      clock: new ManualClock(),
      logger,
      metrics,
    });
    try {
      await stage.start();
      const warning = warnings.find((line) => line.msg.startsWith('media folder'));
      expect(warning?.dir).toBe(join(dir, 'not-a-folder', 'media'));
      expect(warning?.msg).toContain(
        '(media.dir) cannot take downloads: "' + join(dir, 'not-a-folder') + '" is not a folder (ENOTDIR)',
      );
      const [result] = await stage.collect([partOf('u1', [{ url: `http://127.0.0.1:${host.port}/a.png` }])]);
      expect(result?.media).toEqual([]);
      expect(result?.errors).toHaveLength(1);
      expect(result?.errors[0]?.reason).toMatch(
        /^disk: cannot create the session folder in the media folder \(media\.dir\) \(ENOTDIR\)/,
      );
      expect(host.total()).toBe(0);
      expect(await metrics.scrape()).toMatch(/inbox_media_downloads_total\{channel="generic",result="disk"\} 1/);
    } finally {
      await stage.close();
      await host.close();
    }
  });

  it('says nothing at start about a folder not made yet whose parent is writable', async () => {
    const { logger, lines: warnings } = recordingLogger('warn');
    const config = loadConfig({ env: {}, file: { media: { dir: 'later/media' } } });
    const stage = new MediaStage({
      cwd: tempDir().path,
      channels: { ids: () => ['generic'], mediaOf: () => config.media, adapterOf: () => undefined },
      concurrency: 1,
      clock: new ManualClock(),
      logger,
      metrics: new Metrics({ defaultMetrics: false }),
    });
    await stage.start();
    await stage.close();
    expect(warnings).toEqual([]);
  });
});

describe('MediaStage downloads that no flush here collects', () => {
  it('forgets a finished download keepSettledMs after it ended; a flush that asks later downloads again', async () => {
    const host = await serve((_req, res) => {
      res.setHeader('content-type', 'image/png');
      res.end(PNG);
    });
    const clock = new ManualClock();
    const config = loadConfig({
      env: {},
      file: { media: { dir: 'media', allowHosts: [`127.0.0.1:${host.port}`], retries: 0 } },
    });
    const stage = new MediaStage({
      cwd: tempDir().path,
      channels: { ids: () => ['generic'], mediaOf: () => config.media, adapterOf: () => undefined },
      concurrency: 2,
      clock,
      logger: silent,
      metrics: new Metrics({ defaultMetrics: false }),
      keepSettledMs: 60_000,
    });
    try {
      // Admitted here, flushed by another instance (several instances on Redis): never collected here.
      const parts = [
        partOf('u1', [{ url: `http://127.0.0.1:${host.port}/a.png` }]),
        partOf('u2', [{ url: `http://127.0.0.1:${host.port}/b.png` }]),
      ];
      for (const part of parts) stage.begin(part);
      expect(stage.tracked).toBe(2);
      await until(() => clock.pending().filter((ms) => ms === 60_000).length === 2);
      await clock.advance(59_000);
      expect(stage.tracked).toBeGreaterThan(0);
      await clock.advance(60_000);
      expect(stage.tracked).toBe(0);
      // A flush here after all: the attachment downloads again, and the batch gets it.
      const [result] = await stage.collect([parts[0]!]);
      expect(result?.media).toHaveLength(1);
      expect(host.total()).toBe(3);
      expect(stage.tracked).toBe(0);
    } finally {
      await stage.close();
      await host.close();
    }
  });
});
