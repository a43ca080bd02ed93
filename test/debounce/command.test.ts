import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';
import { flushWordTest, isCommand } from '../../src/debounce/command.js';

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
    for (const text of ['stop', 'STOP', ' stop\n', '\u3000停\u3000', '等等']) expect(isFlushWord(text), text).toBe(true);
    for (const text of ['stop it', 'stopp', '停下', '等', '', '/stop', 'x'.repeat(10_000)]) expect(isFlushWord(text), text).toBe(false);
  });

  it('knows no word when none are set', () => {
    expect(flushWordTest(undefined)('stop')).toBe(false);
    expect(flushWordTest([])('stop')).toBe(false);
  });
});

describe('debounce.flushWords', () => {
  it('is none by default; a channel\'s own list replaces the global one, and a channel without one keeps it', () => {
    expect(loadConfig({ env: {}, file: {} }).debounce.flushWords).toBeUndefined();
    const config = loadConfig({ env: {}, file: {
      debounce: { flushWords: ['stop'] },
      channels: [{ id: 'a', adapter: 'generic', debounce: { windowMs: 100 } }, { id: 'b', adapter: 'generic', debounce: { flushWords: ['停'] } }],
    } });
    expect(config.channels.map((channel) => channel.debounce.flushWords)).toEqual([['stop'], ['停']]);
  });

  it('refuses a word that is empty or spaces, or a list that is not one, naming the setting', () => {
    expect(() => loadConfig({ env: {}, file: { debounce: { flushWords: ['stop', '  '] } } })).toThrow(/debounce\.flushWords\[1\]: a word, not empty or spaces/);
    expect(() => loadConfig({ env: {}, file: { debounce: { flushWords: 'stop' } } })).toThrow(/debounce\.flushWords.*must be an array of words/);
    expect(() => loadConfig({ env: {}, file: { channels: [{ id: 'a', adapter: 'generic', debounce: { flushWords: [''] } }] } })).toThrow(/channels\[0\]\.debounce\.flushWords\[0\]/);
  });
});
