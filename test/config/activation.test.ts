import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';
import { tempDir } from '../support/helpers.js';

const load = (file: Record<string, unknown>) =>
  loadConfig({ env: {}, cwd: tempDir().path, file: { channels: [{ id: 'g', adapter: 'generic' }], ...file } });

describe('activation, context, access and budgets settings', () => {
  it('default to emitting everything, on every channel', () => {
    const [channel] = load({}).channels;
    expect(channel).toMatchObject({
      activation: { group: 'always', private: 'always', wakeWords: [], patterns: [], replyToBot: true, commands: true },
      context: { maxMessages: 50, maxAgeMs: 3_600_000, maxChars: 8_000 },
      access: { lists: {}, allow: [], deny: [] },
      budgets: [],
    });
  });

  it('take a channel’s keys over the global ones, merging conversations and lists by key', () => {
    const config = load({
      activation: { group: 'mention', wakeWords: ['bot'], conversations: { 'qq:group:1': { group: 'always' } } },
      access: { lists: { staff: ['qq:1'] }, deny: ['@staff'] },
      budgets: [{ per: 'sender', limit: 2, windowMs: 60_000, action: 'merge' }],
      channels: [
        { id: 'a', adapter: 'generic' },
        {
          id: 'b',
          adapter: 'generic',
          activation: { private: 'never', conversations: { 'qq:group:2': { group: 'never' } } },
          access: { lists: { vip: ['qq:2'] }, allow: ['@vip', '@staff'] },
          budgets: [],
        },
      ],
    });
    const [a, b] = config.channels;
    expect(a!.activation).toMatchObject({ group: 'mention', private: 'always', wakeWords: ['bot'] });
    expect(a!.budgets).toHaveLength(1);
    expect(b!.activation).toMatchObject({ group: 'mention', private: 'never' });
    expect(b!.activation.conversations).toEqual({
      'qq:group:1': { group: 'always' },
      'qq:group:2': { group: 'never' },
    });
    expect(b!.access).toEqual({
      lists: { staff: ['qq:1'], vip: ['qq:2'] },
      allow: ['@vip', '@staff'],
      deny: ['@staff'],
    });
    expect(b!.budgets).toEqual([]);
  });

  it.each([
    [{ activation: { patterns: ['ok', '(unclosed'] } }, /activation\.patterns\[1\]: is not a valid regular expression/],
    [{ activation: { group: 'sometimes' } }, /activation\.group: must be "always", "mention" or "never"/],
    [{ activation: { wakeWords: ['  '] } }, /activation\.wakeWords\[0\]: a word, not empty or spaces/],
    [
      { activation: { conversations: { 'qq:1': {} } } },
      /activation\.conversations\.qq:1: must set "group" or "private"/,
    ],
    [{ budgets: [{ per: 'sender', limit: 0, windowMs: 1000, action: 'merge' }] }, /budgets\[0\]\.limit: at least 1/],
    [{ budgets: [{ per: 'room', limit: 1, windowMs: 1000, action: 'merge' }] }, /budgets\[0\]\.per: must be "sender"/],
    [
      { access: { deny: ['@missing'] } },
      /access\.deny\[0\]: "@missing" names no list of access\.lists \(none is defined\)/,
    ],
    [{ context: { maxMessages: -1 } }, /context\.maxMessages/],
  ])('refuse %j at start, naming the key', (file, message) => {
    expect(() => load(file)).toThrow(message);
  });

  it('names the channel of a bad list reference in its own access', () => {
    expect(() =>
      load({ channels: [{ id: 'g', adapter: 'generic', access: { lists: { a: ['x:1'] }, allow: ['@a', '@b'] } }] }),
    ).toThrow(/channels\[0\]\.access\.allow\[1\]: "@b" names no list of access\.lists \(lists: a\)/);
  });
});
