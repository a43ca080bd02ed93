import { createHash } from 'node:crypto';
import { counted } from '../../core/errors.js';
import { safeEqual } from '../../core/signing.js';
import { CbcBlocks } from '../kit/cbc.js';

// WXBizMsgCrypt, the message encryption of WeChat Official Accounts (safe mode) and WeCom app
// callbacks (developers.weixin.qq.com .../Before_Develop/Technical_Plan.html, WeCom 91144):
// AES-256-CBC, key = base64(EncodingAESKey + "="), IV = key[0:16], PKCS#7 padding to 32-byte
// blocks, plaintext = random(16) | length(4, big-endian) | message | receive id.

/** An EncodingAESKey as the consoles issue it: 43 characters of base64 (32 bytes). */
export const ENCODING_AES_KEY = /^[A-Za-z0-9+/]{43}$/;

// Base64 checked as "no other character" plus where the padding sits: the same strings as
// /^[A-Za-z0-9+/]+={0,2}$/, which took ~2.5 µs over a ciphertext, this ~0.5.
const NOT_BASE64 = /[^A-Za-z0-9+/=]/;
const PADDING = /^={0,2}$/;

/** Whether `text` is base64: its alphabet, at least one character, up to two `=` at the end only. */
export function isBase64(text: string): boolean {
  const pad = text.indexOf('=');
  const end = pad === -1 ? text.length : pad;
  return end > 0 && !NOT_BASE64.test(text) && (pad === -1 || PADDING.test(text.slice(pad)));
}

const BLOCK = 32;

/** sha1 in hex of the parts sorted in dictionary order and joined: `signature` and `msg_signature`. */
export function wxSignature(...parts: string[]): string {
  return createHash('sha1').update(parts.sort().join('')).digest('hex');
}

/** Why a ciphertext did not open; the adapters turn it into a 401 naming the setting to check. */
export class WxCryptoError extends Error {
  override name = 'WxCryptoError';
}

/** The key of one EncodingAESKey, opening ciphertexts meant for one receive id (AppID, CorpID). */
export class WxCrypto {
  private readonly iv: Buffer;
  private readonly blocks: CbcBlocks;

  /** Throws when the key is not 43 characters of base64 (the settings schema says so first). */
  constructor(
    encodingAESKey: string,
    private readonly receiveId: string,
  ) {
    if (!ENCODING_AES_KEY.test(encodingAESKey))
      throw new WxCryptoError('the EncodingAESKey must be 43 characters of base64');
    const key = Buffer.from(`${encodingAESKey}=`, 'base64');
    this.iv = key.subarray(0, 16);
    this.blocks = new CbcBlocks(key);
  }

  /** AES-256-CBC decryption of whole 16-byte blocks, the IV fixed by the key. */
  private cbc(data: Buffer): Buffer {
    return this.blocks.open(data, this.iv);
  }

  /**
   * Decrypt `encrypt` (base64) and return the message bytes. Throws WxCryptoError when it is not
   * whole blocks, its padding is not PKCS#7 to 32 bytes, its length field overruns, or the
   * receive id at its end is not ours: a tampered ciphertext, another key, or another account's.
   */
  open(encrypt: string): Buffer {
    if (!isBase64(encrypt)) throw new WxCryptoError('it is not base64');
    const data = Buffer.from(encrypt, 'base64');
    if (data.length === 0 || data.length % BLOCK !== 0)
      throw new WxCryptoError(`it is ${counted(data.length, 'byte')}, not a whole number of ${BLOCK}-byte blocks`);
    const plain = this.cbc(data);
    const pad = plain[plain.length - 1] as number;
    if (pad < 1 || pad > BLOCK) throw new WxCryptoError('its padding is not PKCS#7 (wrong EncodingAESKey?)');
    for (let i = plain.length - pad; i < plain.length; i++) {
      if (plain[i] !== pad) throw new WxCryptoError('its padding is not PKCS#7 (wrong EncodingAESKey?)');
    }
    const end = plain.length - pad;
    if (end < 20) throw new WxCryptoError('it is too short to hold a message');
    const length = plain.readUInt32BE(16);
    if (20 + length > end) throw new WxCryptoError('its length field runs past its end (wrong EncodingAESKey?)');
    const id = plain.subarray(20 + length, end).toString('utf8');
    if (!safeEqual(id, this.receiveId))
      throw new WxCryptoError(`it is addressed to another receive id, not ${this.receiveId}`);
    return plain.subarray(20, 20 + length);
  }
}
