import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CbcBlocks } from '../../../src/adapters/kit/cbc.js';

describe('CbcBlocks: AES-256-CBC over one ECB decipher', () => {
  const key = randomBytes(32);
  const sealed = (iv: Buffer, plain: Buffer) => {
    const cipher = createCipheriv('aes-256-cbc', key, iv).setAutoPadding(false);
    return Buffer.concat([cipher.update(plain), cipher.final()]);
  };
  const reference = (iv: Buffer, data: Buffer) => {
    const decipher = createDecipheriv('aes-256-cbc', key, iv).setAutoPadding(false);
    return Buffer.concat([decipher.update(data), decipher.final()]);
  };

  it('opens messages one after another, each under its own IV, as a CBC decipher per message does', () => {
    const blocks = new CbcBlocks(key);
    for (const count of [1, 2, 3, 35, 300]) {
      const iv = randomBytes(16);
      const plain = randomBytes(16 * count);
      expect(blocks.open(sealed(iv, plain), iv)).toEqual(plain);
    }
  });

  it('reads the IV and the blocks where they sit in one Buffer, aligned or not (IV in front, as Feishu sends it)', () => {
    const blocks = new CbcBlocks(key);
    for (const shift of [0, 1, 2, 3]) {
      const iv = randomBytes(16);
      const data = sealed(iv, randomBytes(16 * 20));
      const message = Buffer.alloc(shift + 16 + data.length).subarray(shift);
      iv.copy(message);
      data.copy(message, 16);
      expect(blocks.open(message.subarray(16), message.subarray(0, 16))).toEqual(reference(iv, data));
    }
  });
});
