import { describe, expect, it } from 'vitest';
import { accessTest } from '../../src/access/access.js';

const event = (sender: string, sessionKey = 'qq:group:1') => ({ namespace: 'qq', sender: { id: sender }, sessionKey });

describe('access lists', () => {
  it('let everything through when neither list has an entry', () => {
    expect(accessTest({ lists: {}, allow: [], deny: [] })).toBeUndefined();
  });

  it('deny a sender or a conversation, by entry or through a named list', () => {
    const denied = accessTest({ lists: { banned: ['qq:666'] }, allow: [], deny: ['@banned', 'qq:group:9'] })!;
    expect(denied(event('666'))).toBe('sender qq:666 is in access.deny');
    expect(denied(event('1', 'qq:group:9'))).toBe('conversation qq:group:9 is in access.deny');
    expect(denied(event('1'))).toBeUndefined();
  });

  it('with allow entries, let through only an allowed sender or conversation, deny winning', () => {
    const denied = accessTest({ lists: { staff: ['qq:1', 'qq:2'] }, allow: ['@staff', 'qq:group:5'], deny: ['qq:2'] })!;
    expect(denied(event('1'))).toBeUndefined();
    expect(denied(event('9', 'qq:group:5'))).toBeUndefined();
    expect(denied(event('9'))).toBe('neither sender qq:9 nor conversation qq:group:1 is in access.allow');
    expect(denied(event('2', 'qq:group:5'))).toBe('sender qq:2 is in access.deny');
  });
});
