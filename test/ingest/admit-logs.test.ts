import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';
import { createIntake } from '../../src/service/intake.js';
import { tempDir } from '../support/helpers.js';
import { recordingLogger } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';

/** An in-process intake whose log lines are collected, at `level`. */
async function logged(level: 'debug' | 'info') {
  const dir = tempDir();
  const clock = new ManualClock();
  const { logger, lines } = recordingLogger(level);
  const config = loadConfig({
    env: {},
    cwd: dir.path,
    file: { store: 'memory', media: { dir: 'media' }, debounce: { windowMs: 1000 }, dedup: { fuzzy: 'always' } },
  });
  const intake = await createIntake({ config, logger, cwd: dir.path, clock });
  const send = (body: Record<string, unknown>) =>
    intake.ingest('generic', {
      headers: { 'content-type': 'application/json' },
      query: new URLSearchParams(),
      now: clock.now(),
      body: Buffer.from(JSON.stringify(body)),
    });
  return { intake, clock, lines, send, dir };
}

describe('log lines of admission, as the README lists them', () => {
  it('one debug line per verdict (accepted, duplicate, fuzzy duplicate), an info line per merge, no content', async () => {
    const { intake, clock, lines, send, dir } = await logged('debug');
    await send({ id: 'm1', sessionKey: 'cli:a', sender: { id: 'u' }, content: 'secret words one' });
    await send({ id: 'm1', sessionKey: 'cli:a', sender: { id: 'u' }, content: 'secret words one' });
    await send({ id: 'm2', sessionKey: 'cli:a', sender: { id: 'u' }, content: 'secret words one' });
    await send({ id: 'm3', sessionKey: 'cli:a', sender: { id: 'u' }, content: 'secret words two' });
    await clock.advance(2000);
    await intake.settle();
    const verdicts = lines.filter((line) => line.level === 20 && typeof line.verdict === 'string');
    expect(verdicts.map((line) => [line.id, line.verdict])).toEqual([
      ['m1', 'accepted'],
      ['m1', 'duplicate'],
      ['m2', 'fuzzy_duplicate'],
      ['m3', 'accepted'],
    ]);
    expect(verdicts[1]).toMatchObject({
      channel: 'generic',
      sessionKey: 'cli:a',
      reason: 'platform id m1 was already taken',
    });
    expect(lines.filter((line) => line.level === 30 && line.merged === 2)).toHaveLength(1);
    expect(JSON.stringify(lines)).not.toContain('secret words');
    await intake.close();
    dir.remove();
  });

  it('writes no verdict line at info', async () => {
    const { intake, lines, send, dir } = await logged('info');
    await send({ id: 'm1', sessionKey: 'cli:a', sender: { id: 'u' }, content: 'hello' });
    await send({ id: 'm1', sessionKey: 'cli:a', sender: { id: 'u' }, content: 'hello' });
    expect(lines.filter((line) => typeof line.verdict === 'string')).toEqual([]);
    await intake.close();
    dir.remove();
  });
});
