// The Feishu / Lark SDK, @larksuiteoapi/node-sdk, on the same deliveries as the feishu case: what
// its EventDispatcher does with an encrypted event before handing it to a handler. The body
// parsed as its framework adapters receive it (JSON, the headers beside), the signature checked
// by its own RequestHandle.checkIsEventValidated (sha256 of timestamp, nonce, Encrypt Key and the
// body re-serialized), then AESCipher.decrypt and JSON.parse.
import { AESCipher, EventDispatcher, LoggerLevel } from '@larksuiteoapi/node-sdk';
import * as feishu from './feishu.mjs';

export const name = '@larksuiteoapi/node-sdk 1.74.0';

const { encryptKey, verificationToken } = feishu.channel;
const dispatcher = new EventDispatcher({ encryptKey, verificationToken, loggerLevel: LoggerLevel.error });
const cipher = new AESCipher(encryptKey);

function open({ headers, body }) {
  const data = Object.assign(Object.create({ headers }), JSON.parse(body.toString('utf8')));
  if (!dispatcher.requestHandle.checkIsEventValidated(data)) throw new Error('X-Lark-Signature does not match');
  return JSON.parse(cipher.decrypt(data.encrypt));
}

/** One opener per case of bench/verify/ it runs beside, keyed by that case's file name. */
export const sdk = { feishu: open };
