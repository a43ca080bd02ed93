import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isBase64, WxCrypto } from '../../../src/adapters/wx/crypto.js';

const KEY = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG';

describe('isBase64', () => {
  const regex = /^[A-Za-z0-9+/]+={0,2}$/;
  it.each([
    '',
    '=',
    '==',
    'QQ==',
    'QQ=',
    'QUJD',
    'QQ===',
    'Q=Q=',
    '=QQ',
    'QQ= ',
    ' QQ',
    'Q\nQ',
    'QQ-_',
    'QQ==\u00e9',
    'a+b/',
    'QQ=x',
    'A'.repeat(428),
  ])('%j as the regex decides', (text) => {
    expect(isBase64(text)).toBe(regex.test(text));
  });
});

describe('WxCrypto CBC over one ECB decipher', () => {
  const key = Buffer.from(`${KEY}=`, 'base64');
  const cbc = (crypto: WxCrypto, data: Buffer) => (crypto as unknown as { cbc(data: Buffer): Buffer }).cbc(data);
  const reference = (data: Buffer) => {
    const decipher = createDecipheriv('aes-256-cbc', key, key.subarray(0, 16));
    decipher.setAutoPadding(false);
    return Buffer.concat([decipher.update(data), decipher.final()]);
  };

  it('equals AES-256-CBC, with aligned and unaligned buffers', () => {
    const crypto = new WxCrypto(KEY, 'wx');
    for (const blocks of [2, 3, 10, 300]) {
      const cipher = createCipheriv('aes-256-cbc', key, key.subarray(0, 16));
      cipher.setAutoPadding(false);
      const data = Buffer.concat([cipher.update(randomBytes(16 * blocks)), cipher.final()]);
      expect(cbc(crypto, data)).toEqual(reference(data));
      const unaligned = Buffer.alloc(data.length + 1).subarray(1);
      data.copy(unaligned);
      expect(unaligned.byteOffset % 4).not.toBe(0);
      expect(cbc(crypto, unaligned)).toEqual(reference(data));
    }
  });
});
