import { describe, expect, it } from 'vitest';
import { createIntake } from '../../src/service/intake.js';
import { loadConfig } from '../../src/service/configure.js';
import type { Output } from '../../src/events/output.js';
import { ManualClock } from '../support/manual-clock.js';
import { deliverJson, tempDir } from '../support/helpers.js';
import { silent } from '../support/logger.js';

describe('shutdown of a memory store', () => {
  it('close() on a memory store emits the part that arrived after a command cut its buffer (it is lost today)', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const config = loadConfig({ env: {}, cwd: dir.path, file: { store: 'memory', logLevel: 'silent', media: { dir: 'media' }, debounce: { windowMs: 1000, maxMessages: 10, maxWaitMs: 5000 } } });
    const intake = await createIntake({ config, logger: silent, cwd: dir.path, clock });
    const out: string[] = [];
    intake.on('chat.processedMessage', (o: Output) => { out.push((o as { content: string }).content); });
    const send = (id: string, content: string) => deliverJson(intake, { id, sessionKey: 'cli:a', content }, clock.now());
    // No timer fires on the manual clock: all three parts wait in one buffer, cut after the command.
    expect((await send('1', 'hello')).status).toBe(200);
    expect((await send('2', '/status')).status).toBe(200);
    expect((await send('3', 'after the command')).status).toBe(200);
    await intake.close();
    dir.remove();
    expect(out).toEqual(['hello /status', 'after the command']);
  });
});
