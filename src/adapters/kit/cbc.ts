import { createDecipheriv, type Decipher } from 'node:crypto';

/**
 * AES-256-CBC decryption of whole blocks with one AES-256-ECB decipher for the life of a
 * channel: CBC's plaintext block i is the ECB decryption of ciphertext block i XOR ciphertext
 * block i - 1 (the IV for the first), and ECB keeps no state between whole blocks, so one
 * decipher serves every message. Making a CBC decipher per message cost ~10 µs, more than the
 * rest of a delivery's crypto. Padding is the caller's: WeChat and WeCom pad to 32 bytes, Feishu
 * to 16.
 */
export class CbcBlocks {
  private readonly blocks: Decipher;

  constructor(key: Buffer) {
    this.blocks = createDecipheriv('aes-256-ecb', key, null);
    this.blocks.setAutoPadding(false);
  }

  /** The plaintext of `data` (a whole number of 16-byte blocks, never empty) chained from `iv`. */
  open(data: Buffer, iv: Buffer): Buffer {
    const plain = this.blocks.update(data);
    for (let i = 0; i < 16; i++) plain[i] = (plain[i] as number) ^ (iv[i] as number);
    if (plain.byteOffset % 4 === 0 && data.byteOffset % 4 === 0) {
      // Four bytes at a time where both buffers are aligned (they are as Node allocates them).
      const out = new Uint32Array(plain.buffer, plain.byteOffset, plain.length >> 2);
      const before = new Uint32Array(data.buffer, data.byteOffset, data.length >> 2);
      for (let i = 4; i < out.length; i++) out[i] = (out[i] as number) ^ (before[i - 4] as number);
    } else {
      for (let i = 16; i < plain.length; i++) plain[i] = (plain[i] as number) ^ (data[i - 16] as number);
    }
    return plain;
  }
}
