import { createCipheriv } from 'node:crypto';
import { encrypt, getSignature } from '@wecom/crypto';
import type { Adapter, Normalized, RawDelivery } from '../../src/adapters/kit/types.js';
import { parseJson } from '../../src/http/body.js';

// Test payloads of WeChat and WeCom made with the official library (@wecom/crypto), and the way
// the pipeline runs an adapter over one delivery.

export const LIMITS = { maxDepth: 64, maxKeys: 10_000 };

/** verify, parseBody, normalize: what the pipeline does with one delivery. */
export function ingest(adapter: Adapter, delivery: RawDelivery, limits = LIMITS): Normalized {
  adapter.verify(delivery);
  const body = adapter.parseBody
    ? adapter.parseBody(delivery.body, limits, (bytes) => parseJson(bytes, limits.maxDepth, limits.maxKeys))
    : parseJson(delivery.body, limits.maxDepth, limits.maxKeys);
  return adapter.normalize(body, delivery);
}

/** The error `fn` throws. */
export function thrown(fn: () => unknown): any {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('did not throw');
}

export interface Sealed {
  query: URLSearchParams;
  body: Buffer;
  encrypt: string;
}

/**
 * An encrypted callback as WeChat (safe mode) or WeCom sends it: the message encrypted by the
 * official library for `receiveId`, the envelope, and msg_signature in the query.
 */
export function seal(options: {
  token: string;
  key: string;
  receiveId: string;
  message: string;
  timestamp: string;
  nonce?: string;
  toUser?: string;
  agentId?: string;
  wechat?: boolean;
  encrypt?: string;
}): Sealed {
  const nonce = options.nonce ?? '1320562132';
  const ciphertext = options.encrypt ?? encrypt(options.key, options.message, options.receiveId);
  const query = new URLSearchParams({
    msg_signature: getSignature(options.token, options.timestamp, nonce, ciphertext),
    timestamp: options.timestamp,
    nonce,
  });
  if (options.wechat) {
    query.set('encrypt_type', 'aes');
    // WeChat signs the URL the plain way too; '' sorts first, so this is sha1(sort(token, timestamp, nonce)).
    query.set('signature', getSignature(options.token, options.timestamp, nonce, ''));
  }
  const agent = options.agentId ? `<AgentID><![CDATA[${options.agentId}]]></AgentID>` : '';
  const body = Buffer.from(
    `<xml><ToUserName><![CDATA[${options.toUser ?? 'gh_3f5e2a1b9c7d'}]]></ToUserName>${agent}<Encrypt><![CDATA[${ciphertext}]]></Encrypt></xml>`,
  );
  return { query, body, encrypt: ciphertext };
}

/**
 * A ciphertext with the WXBizMsgCrypt layout whose padding is not PKCS#7: the plaintext filled
 * with spaces up to a whole block, its last byte `last` (5: four bytes claimed that are spaces;
 * 0 or 33: no valid pad length at all).
 */
export function badlyPadded(key: string, message: string, receiveId: string, last: number): string {
  const aes = Buffer.from(`${key}=`, 'base64');
  const msg = Buffer.from(message);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(msg.length);
  const plain = Buffer.concat([Buffer.alloc(16, 7), length, msg, Buffer.from(receiveId)]);
  const padded = Buffer.concat([plain, Buffer.alloc(32 - (plain.length % 32) + 32, 0x20)]);
  padded[padded.length - 1] = last;
  const cipher = createCipheriv('aes-256-cbc', aes, aes.subarray(0, 16));
  cipher.setAutoPadding(false);
  return Buffer.concat([cipher.update(padded), cipher.final()]).toString('base64');
}

/** A billion-laughs document and an external-entity one: both refused before parsing. */
export const HOSTILE_XML = [
  '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]><xml><ToUserName>a</ToUserName><FromUserName>b</FromUserName><CreateTime>1</CreateTime><MsgType>text</MsgType><Content>&lol2;</Content><MsgId>1</MsgId></xml>',
  '<?xml version="1.0"?><!DOCTYPE xml [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><xml><ToUserName>a</ToUserName><FromUserName>b</FromUserName><CreateTime>1</CreateTime><MsgType>text</MsgType><Content>&xxe;</Content><MsgId>1</MsgId></xml>',
];
