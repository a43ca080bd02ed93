// The official WXBizMsgCrypt library for Node, @wecom/crypto, on the same deliveries as the wecom
// and wechat (safe mode) cases: what a handler written with it does per callback. The library
// reads no XML, so both documents go through fast-xml-parser with this project's options
// (src/adapters/wx/xml.ts: entities off, every value a string), as its README leaves to the user:
// the envelope's <Encrypt>, getSignature compared with msg_signature, decrypt, the receive id
// compared with ours, the message parsed.
import { decrypt, getSignature } from '@wecom/crypto';
import { XMLParser } from 'fast-xml-parser';
import * as wecom from './wecom.mjs';
import * as wechat from './wechat.mjs';

export const name = '@wecom/crypto 1.0.1 + fast-xml-parser';

const parser = new XMLParser({
  processEntities: false,
  htmlEntities: false,
  ignoreAttributes: true,
  ignoreDeclaration: true,
  ignorePiTags: true,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
});

function opener({ token, encodingAESKey }, receiveId) {
  return function open({ body, query }) {
    const encrypt = parser.parse(body.toString('utf8')).xml.Encrypt;
    if (getSignature(token, query.get('timestamp'), query.get('nonce'), encrypt) !== query.get('msg_signature'))
      throw new Error('msg_signature does not match');
    const { message, id } = decrypt(encodingAESKey, encrypt);
    if (id !== receiveId) throw new Error(`the receive id is ${id}`);
    return parser.parse(message).xml;
  };
}

/** One opener per case of bench/verify/ it runs beside, keyed by that case's file name. */
export const sdk = {
  wecom: opener(wecom.channel, wecom.channel.corpId),
  wechat: opener(wechat.channel, wechat.channel.appId),
};
