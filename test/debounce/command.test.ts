import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';
import { createIntake } from '../../src/service/intake.js';
import { flushWordTest, isCommand } from '../../src/debounce/command.js';
import type { Output } from '../../src/events/output.js';
import { deliverJson, tempDir } from '../support/helpers.js';
import { silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';

describe('isCommand', () => {
  it('recognises slash commands only at the start', () => {
    expect(isCommand('/reset')).toBe(true);
    expect(isCommand('  /reset')).toBe(true);
    expect(isCommand('a/b')).toBe(false);
  });
});

describe('flushWordTest', () => {
  it('knows a whole message that is one of the words, trimmed and in any case, and nothing else', () => {
    const isFlushWord = flushWordTest([' Stop', '停', '等等']);
    for (const text of ['stop', 'STOP', ' stop\n', '\u3000停\u3000', '等等'])
      expect(isFlushWord(text), text).toBe(true);
    for (const text of ['stop it', 'stopp', '停下', '等', '', '/stop', 'x'.repeat(10_000)])
      expect(isFlushWord(text), text).toBe(false);
  });

  it('knows no word when none are set', () => {
    expect(flushWordTest(undefined)('stop')).toBe(false);
    expect(flushWordTest([])('stop')).toBe(false);
  });
});

describe('debounce.flushWords', () => {
  it("is none by default; a channel's own list replaces the global one, and a channel without one keeps it", () => {
    expect(loadConfig({ env: {}, file: {} }).debounce.flushWords).toBeUndefined();
    const config = loadConfig({
      env: {},
      file: {
        debounce: { flushWords: ['stop'] },
        channels: [
          { id: 'a', adapter: 'generic', debounce: { windowMs: 100 } },
          { id: 'b', adapter: 'generic', debounce: { flushWords: ['停'] } },
        ],
      },
    });
    expect(config.channels.map((channel) => channel.debounce.flushWords)).toEqual([['stop'], ['停']]);
  });

  it('refuses a word that is empty or spaces, or a list that is not one, naming the setting', () => {
    expect(() => loadConfig({ env: {}, file: { debounce: { flushWords: ['stop', '  '] } } })).toThrow(
      /debounce\.flushWords\[1\]: a word, not empty or spaces/,
    );
    expect(() => loadConfig({ env: {}, file: { debounce: { flushWords: 'stop' } } })).toThrow(
      /debounce\.flushWords.*must be an array of words/,
    );
    expect(() =>
      loadConfig({ env: {}, file: { channels: [{ id: 'a', adapter: 'generic', debounce: { flushWords: [''] } }] } }),
    ).toThrow(/channels\[0\]\.debounce\.flushWords\[0\]/);
  });
});

describe("regression: a command's cut at shutdown", () => {
  it('close() on a memory store emits the part that arrived after a command cut its buffer', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const config = loadConfig({
      env: {},
      cwd: dir.path,
      file: {
        store: 'memory',
        logLevel: 'silent',
        media: { dir: 'media' },
        debounce: { windowMs: 1000, maxMessages: 10, maxWaitMs: 5000 },
      },
    });
    const intake = await createIntake({ config, logger: silent, cwd: dir.path, clock });
    const out: string[] = [];
    intake.on('chat.processedMessage', (o: Output) => {
      out.push((o as { content: string }).content);
    });
    const send = (id: string, content: string) =>
      deliverJson(intake, { id, sessionKey: 'cli:a', content }, clock.now());
    // No timer fires on the manual clock: all three parts wait in one buffer, cut after the command.
    expect((await send('1', 'hello')).status).toBe(200);
    expect((await send('2', '/status')).status).toBe(200);
    expect((await send('3', 'after the command')).status).toBe(200);
    await intake.close();
    dir.remove();
    expect(out).toEqual(['hello /status', 'after the command']);
  });
});
