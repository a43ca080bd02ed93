import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { safeEqual } from '../../src/core/signing.js';

describe('safeEqual', () => {
  const digest = createHash('sha256').update('body').digest('hex');

  it('holds a string equal to an equal string, the empty string included', () => {
    expect(safeEqual(digest, createHash('sha256').update('body').digest('hex'))).toBe(true);
    expect(safeEqual('', '')).toBe(true);
    expect(safeEqual('企业微信', '企业微信')).toBe(true);
  });

  it('tells apart strings that differ in their first, a middle or their last character', () => {
    for (const at of [0, 31, 63]) {
      const other = digest.slice(0, at) + (digest[at] === '0' ? '1' : '0') + digest.slice(at + 1);
      expect(safeEqual(digest, other)).toBe(false);
    }
    expect(safeEqual('企业微信', '企业微言')).toBe(false);
  });

  it('tells apart a string and its prefix, its extension, its upper case and an empty string', () => {
    expect(safeEqual(digest, digest.slice(0, 63))).toBe(false);
    expect(safeEqual(digest, `${digest}0`)).toBe(false);
    expect(safeEqual(digest, digest.toUpperCase())).toBe(false);
    expect(safeEqual(digest, '')).toBe(false);
    expect(safeEqual('', digest)).toBe(false);
  });
});
