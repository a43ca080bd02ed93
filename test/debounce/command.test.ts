import { describe, expect, it } from 'vitest';
import { isCommand } from '../../src/debounce/command.js';

describe('isCommand', () => {
  it('recognises slash commands only at the start', () => {
    expect(isCommand('/reset')).toBe(true);
    expect(isCommand('  /reset')).toBe(true);
    expect(isCommand('a/b')).toBe(false);
  });
});
