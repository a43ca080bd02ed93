// A WeChat Official Account callback in safe mode: the text message AES-encrypted for the AppID,
// msg_signature over token, timestamp, nonce and the ciphertext (made here as WeChat makes it).
import { createCipheriv, createHash, randomBytes } from 'node:crypto';

const TOKEN = 'bench-wechat-token';
const APP_ID = 'wx2c2769f8efd9abc2';
const KEY = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG';

export const name = 'wechat (safe mode)';
export const channel = { id: 'wechat', adapter: 'wechat', token: TOKEN, appId: APP_ID, encodingAESKey: KEY };

/** WXBizMsgCrypt: random16 | len4 | msg | receiveId, PKCS#7 to 32 bytes, AES-256-CBC, IV = key[0:16]. */
export function seal(message, receiveId, key = KEY) {
  const aes = Buffer.from(`${key}=`, 'base64');
  const msg = Buffer.from(message);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(msg.length);
  const plain = Buffer.concat([randomBytes(16), length, msg, Buffer.from(receiveId)]);
  const pad = 32 - (plain.length % 32);
  const cipher = createCipheriv('aes-256-cbc', aes, aes.subarray(0, 16));
  cipher.setAutoPadding(false);
  return Buffer.concat([cipher.update(Buffer.concat([plain, Buffer.alloc(pad, pad)])), cipher.final()]).toString(
    'base64',
  );
}

export const sha1Sorted = (...parts) => createHash('sha1').update(parts.sort().join('')).digest('hex');

export function delivery(i) {
  const ts = String(Math.floor(Date.now() / 1000));
  const nonce = String(1_000_000 + i);
  const xml = `<xml><ToUserName><![CDATA[gh_3f5e2a1b9c7d]]></ToUserName><FromUserName><![CDATA[oRd5a6kQd3Xh8Zy1Lm2NpQ7s${i % 1000}]]></FromUserName><CreateTime>${ts}</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[hello ${i}]]></Content><MsgId>${6054768590064713728n + BigInt(i)}</MsgId></xml>`;
  const encrypt = seal(xml, APP_ID);
  const query = new URLSearchParams({
    signature: sha1Sorted(TOKEN, ts, nonce),
    timestamp: ts,
    nonce,
    openid: 'o',
    encrypt_type: 'aes',
    msg_signature: sha1Sorted(TOKEN, ts, nonce, encrypt),
  });
  const body = Buffer.from(
    `<xml><ToUserName><![CDATA[gh_3f5e2a1b9c7d]]></ToUserName><Encrypt><![CDATA[${encrypt}]]></Encrypt></xml>`,
  );
  return { headers: { 'content-type': 'text/xml' }, body, query };
}
