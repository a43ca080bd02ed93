// A WeCom app callback: the text message AES-encrypted for the CorpID, msg_signature over token,
// timestamp, nonce and the ciphertext.
import { seal, sha1Sorted } from './wechat.mjs';

const TOKEN = 'bench-wecom-token';
const CORP_ID = 'ww1234567890abcdef';
const KEY = 'kWxPEV2UEDyxWpmPdKC3F4dgPDmOvfKX1HGnEUDS1aR';

export const name = 'wecom';
export const channel = {
  id: 'wecom',
  adapter: 'wecom',
  token: TOKEN,
  corpId: CORP_ID,
  encodingAESKey: KEY,
  agentId: '1000002',
};

export function delivery(i) {
  const ts = String(Math.floor(Date.now() / 1000));
  const nonce = String(1_000_000 + i);
  const xml = `<xml><ToUserName><![CDATA[${CORP_ID}]]></ToUserName><FromUserName><![CDATA[user${i % 1000}]]></FromUserName><CreateTime>${ts}</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[hello ${i}]]></Content><MsgId>${7381234567890123456n + BigInt(i)}</MsgId><AgentID>1000002</AgentID></xml>`;
  const encrypt = seal(xml, CORP_ID, KEY);
  const query = new URLSearchParams({ msg_signature: sha1Sorted(TOKEN, ts, nonce, encrypt), timestamp: ts, nonce });
  const body = Buffer.from(
    `<xml><ToUserName><![CDATA[${CORP_ID}]]></ToUserName><AgentID><![CDATA[1000002]]></AgentID><Encrypt><![CDATA[${encrypt}]]></Encrypt></xml>`,
  );
  return { headers: { 'content-type': 'text/xml' }, body, query };
}
