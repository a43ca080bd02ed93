import { createDecipheriv } from 'node:crypto';
import { inflateSync } from 'node:zlib';

/**
 * How KOOK wraps a webhook body (developer.kookapp.cn/doc/webhook; kaiheila/api-docs
 * docs/zh-cn/webhook.md): zlib-deflated (RFC 1950) unless the callback URL says `compress=0`,
 * and, with an Encrypt Key, `{"encrypt": "<base64>"}` inside. Compression is applied on top of
 * encryption, so a body is inflated first and decrypted second.
 */

/** Whether the bytes are a JSON object or array as sent, after any whitespace: not deflated. */
export function looksLikeJson(raw: Buffer): boolean {
  for (const byte of raw) {
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d) continue;
    return byte === 0x7b || byte === 0x5b;
  }
  return false;
}

/** The inflated bytes, at most `maxBytes` of them; throws with zlib's words when they are not a zlib stream. */
export function inflated(raw: Buffer, maxBytes: number): Buffer {
  try {
    return inflateSync(raw, { maxOutputLength: maxBytes });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ERR_BUFFER_TOO_LARGE') throw new Error(`it inflates to more than ${maxBytes} bytes`);
    throw new Error(`it is neither JSON nor a zlib stream (${(error as Error).message})`);
  }
}

/**
 * Opens KOOK's `encrypt` field: base64 whose first 16 characters are the IV (as ASCII bytes)
 * and whose rest is the base64 text of the AES-256-CBC ciphertext (PKCS#7), under the Encrypt
 * Key right-padded with NUL to 32 bytes (longer keys cut to 32, as kaiheila/golang-bot
 * api/helper/security_helper.go does).
 */
export class KookCipher {
  private readonly key: Buffer;

  constructor(encryptKey: string) {
    this.key = Buffer.alloc(32);
    Buffer.from(encryptKey, 'utf8').copy(this.key, 0, 0, 32);
  }

  /** The plaintext bytes; throws when it is not an IV and whole blocks with PKCS#7 padding (another key, a tampered body). */
  open(encrypted: string): Buffer {
    const outer = Buffer.from(encrypted, 'base64');
    if (outer.length <= 16) throw new Error('it is shorter than its 16-byte IV');
    const data = Buffer.from(outer.subarray(16).toString('latin1'), 'base64');
    if (data.length === 0 || data.length % 16 !== 0) throw new Error('its ciphertext is not whole AES blocks');
    const decipher = createDecipheriv('aes-256-cbc', this.key, outer.subarray(0, 16));
    try {
      return Buffer.concat([decipher.update(data), decipher.final()]);
    } catch {
      throw new Error('its padding is not PKCS#7');
    }
  }
}
