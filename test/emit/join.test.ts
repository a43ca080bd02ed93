import { describe, expect, it } from 'vitest';
import { joinFragments } from '../../src/emit/join.js';

describe('joinFragments', () => {
  it("merges the README's example exactly", () => {
    expect(joinFragments(['帮我查一下', '订单 ORD-123', '的状态'])).toBe('帮我查一下订单 ORD-123 的状态');
  });

  it('joins latin fragments with one space and trims each', () => {
    expect(joinFragments(['  restart ', 'the', 'service  '])).toBe('restart the service');
  });

  it('puts no space between CJK punctuation and CJK text, but spaces Hangul words', () => {
    expect(joinFragments(['好的，', '谢谢'])).toBe('好的，谢谢');
    expect(joinFragments(['こんにちは', '世界'])).toBe('こんにちは世界');
    expect(joinFragments(['안녕', '하세요'])).toBe('안녕 하세요');
  });

  it('skips empty fragments from media-only messages', () => {
    expect(joinFragments(['', 'look', '  '])).toBe('look');
    expect(joinFragments(['', ''])).toBe('');
  });

  it('treats an astral character at the end as one character', () => {
    expect(joinFragments(['𠀀', '字'])).toBe('𠀀字');
    expect(joinFragments(['ok 😀', '字'])).toBe('ok 😀 字');
  });
});
