import { createHash } from 'node:crypto';
import { z } from 'zod';
import { RequestError } from '../../core/errors.js';
import { AccessToken, type AdapterContext } from '../kit/access-token.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder } from '../kit/event.js';
import { baseUrl, optionalText, requiredText } from '../kit/settings.js';
import { own } from '../kit/shape.js';
import {
  checkSignature,
  echoReply,
  shapeError,
  verifiedSecret,
  type Adapter,
  type Normalized,
  type PlatformReply,
  type RawDelivery,
} from '../kit/types.js';
import { ENCODING_AES_KEY, WxCrypto, wxSignature } from '../wx/crypto.js';
import { issueToken, wxMediaResolver } from '../wx/media.js';
import { freshTimestamp, openOrRefuse, queryOf, wxEvents, wxQueryCheck, type WxSource } from '../wx/message.js';
import { envelopeEncrypt, parseXml, XML_BODIES, type XmlLimits } from '../wx/xml.js';
import type { ReplyParts, ReplyTarget, ReplyValue } from '../../events/reply.js';
import { idValue } from '../kit/reply.js';

const settings = z.strictObject({
  /** The Token of the app's 接收消息 > API 接收 settings: signs every callback. */
  token: optionalText(),
  /** The EncodingAESKey of the same settings: every callback is encrypted with it. */
  encodingAESKey: requiredText("the 43-character EncodingAESKey of the app's API 接收 settings").regex(
    ENCODING_AES_KEY,
    { error: 'must be the 43-character EncodingAESKey (letters, digits, + and /)' },
  ),
  /** The CorpID (我的企业 > 企业ID): the receive id inside every ciphertext. */
  corpId: requiredText('the CorpID, 我的企业 > 企业信息 > 企业ID'),
  /** The app's AgentId: callbacks of another app are refused; the bot id of the channel's events. */
  agentId: z
    .union([z.string({ error: 'must be the AgentId' }), z.number({ error: 'must be the AgentId' }).int()])
    .optional()
    .transform((value) => (value === undefined || value === '' ? undefined : String(value))),
  /** The app's Secret, to fetch the access token that downloads media; without it media are not fetched. */
  secret: optionalText(),
  apiBaseUrl: baseUrl('https://qyapi.weixin.qq.com'),
  /** How far the signed `timestamp` may be from now, seconds; 0 accepts any. */
  timestampToleranceSec: z.number({ error: 'must be a number of seconds' }).int().min(0).max(86_400).default(300),
});

/** WeCom (企业微信) self-built app callbacks. */
export const wecom = defineAdapter({
  name: 'wecom',
  namespace: 'wecom',
  secret: { setting: 'token', required: true },
  settings,
  // WeCom 90930 (回调配置, as copied verbatim by third parties): no 200 within 5 s and the
  // callback is retried, three retries: the last copy comes about 20 s after the first.
  retryHorizonMs: 20_000,
  // The signed timestamp passes within timestampToleranceSec either way of our clock.
  replayHorizonMs: (options) => 2 * options.timestampToleranceSec * 1000,
  create: wecomAdapter,
});

const RECEIVED: PlatformReply = { status: 200, body: '' };
/** The longest plaintext answered to a URL check: WeCom's echostr is a random string of some 20 characters. */
const MAX_ECHO = 128;
const LT = 0x3c;
/** The envelope is `<xml><ToUserName/><AgentID/><Encrypt/></xml>`. */
const ENVELOPE: XmlLimits = { maxDepth: 4, maxKeys: 16 };

/**
 * WeCom app callbacks, always encrypted. GET: the URL check, `msg_signature` over [token,
 * timestamp, nonce, echostr], answered with the decrypted echostr, bare, when it is one (short,
 * not XML). POST: the envelope's
 * `Encrypt`, `msg_signature` over [token, timestamp, nonce, Encrypt], decrypted for our CorpID.
 * Answered 200 with an empty body once recorded. A `ChatId` puts a message in its group chat.
 * The signed `timestamp` is held to `timestampToleranceSec` on both.
 */
export function wecomAdapter(
  channel: AdapterChannel,
  options: z.output<typeof settings>,
  context: AdapterContext,
): Adapter {
  const { corpId, agentId, secret, apiBaseUrl } = options;
  const token = verifiedSecret(channel, options.token);
  const crypto = new WxCrypto(options.encodingAESKey, corpId);
  const fail = (problem: string) => shapeError(channel, 'a WeCom callback', problem);
  const check = wxQueryCheck(channel, options.timestampToleranceSec, 'WeCom');
  const where = `channels[${channel.index}]`;
  const keys = `${where}.encodingAESKey and ${where}.corpId`;
  const mismatch = `(sha1 of token, timestamp, nonce and the ciphertext) does not match: is ${where}.token the Token of the app's API 接收 settings?`;
  const source: WxSource = {
    buildEvent: eventBuilder({
      channel: channel.id,
      adapter: 'wecom',
      namespace: channel.namespace,
      idPrefix: 'wecom',
    }),
    fail,
    botId: agentId ?? corpId,
    groupChats: true,
  };
  // One token per app: a corp's apps each have their own Secret.
  const accessToken = secret
    ? new AccessToken(
        `wecom:token:${corpId}:${createHash('sha256').update(secret).digest('hex').slice(0, 16)}`,
        context,
        (signal) =>
          issueToken(
            `${apiBaseUrl}/cgi-bin/gettoken?corpid=${encodeURIComponent(corpId)}&corpsecret=${encodeURIComponent(secret)}`,
            secret,
            'cgi-bin/gettoken',
            signal,
          ),
      )
    : undefined;
  const opened = new WeakMap<Buffer, Buffer>();

  /** Check `msg_signature` over the ciphertext and its timestamp (unless `"verify": false`) and decrypt it. */
  function open(delivery: RawDelivery, encrypt: string): Buffer {
    if (token) {
      const timestamp = freshTimestamp(delivery, check);
      const expected = wxSignature(token, timestamp, queryOf(delivery, 'nonce', check), encrypt);
      checkSignature(channel, 'msg_signature', delivery.query.get('msg_signature') ?? undefined, expected, mismatch);
    }
    return openOrRefuse(crypto, encrypt, check, keys);
  }

  return {
    name: 'wecom',
    replyTo: wecomReply,
    channel: channel.id,
    namespace: channel.namespace,
    botIds: [agentId ?? corpId],

    verify(delivery) {
      const text = delivery.body.toString('utf8');
      const encrypt = envelopeEncrypt(text, ENVELOPE, fail);
      if (!encrypt) throw fail('a WeCom callback needs <Encrypt>');
      opened.set(delivery.body, open(delivery, encrypt));
    },

    bodyTypes: XML_BODIES,

    parseBody(raw, limits) {
      const message = opened.get(raw);
      if (!message) throw fail('the callback was not decrypted');
      opened.delete(raw);
      return parseXml(message, limits, fail);
    },

    normalize(body, delivery): Normalized {
      const xml = body as Record<string, unknown>;
      if (typeof xml !== 'object' || xml === null || Array.isArray(xml))
        throw fail('the message must be an <xml> element');
      const agent = own(xml, 'AgentID');
      if (agentId !== undefined && agent !== undefined && agent !== '' && String(agent) !== agentId) {
        throw fail(
          `AgentID ${typeof agent === 'string' ? agent : '?'} is another app's; ${where}.agentId is ${agentId}`,
        );
      }
      return { ...wxEvents(xml, source, delivery.now), reply: RECEIVED };
    },

    handshake(delivery) {
      const raw = delivery.query.get('echostr');
      if (!raw)
        throw new RequestError(
          'bad_handshake',
          400,
          `GET on channel "${channel.id}" is the WeCom URL check and needs msg_signature, timestamp, nonce and echostr query parameters`,
          { channel: channel.id, stage: 'adapter' },
        );
      // The query is URL-decoded; a "+" of the base64 that came unescaped reads as a space.
      const echo = open(delivery, raw.replaceAll(' ', '+'));
      // Any ciphertext of this channel opens here, a message callback's <Encrypt> as well as an
      // echostr, and both are signed the same way: answer only what a URL check's echostr is
      // (WeCom 96466, 验证URL有效性: an encrypted random string, digits in its samples), never a
      // message (an <xml> document) replayed as echostr to read it in clear text.
      if (echo.length > MAX_ECHO || echo.includes(LT)) {
        throw new RequestError(
          'bad_handshake',
          400,
          `GET on channel "${channel.id}": the echostr decrypts to ${echo.includes(LT) ? 'XML' : `${echo.length} bytes`}, not the short random string of a WeCom URL check (a message's Encrypt sent as echostr?); it is not answered`,
          { channel: channel.id, stage: 'adapter' },
        );
      }
      return echoReply(echo.toString('utf8'));
    },

    resolveMedia: wxMediaResolver(
      apiBaseUrl,
      accessToken,
      `${where}.secret (the app's Secret) is needed to download WeCom media`,
    ),
  };
}

/** An app message `POST /cgi-bin/message/send {touser, agentid, ...}`, or to a group chat `appchat/send {chatid, ...}`. */
export function wecomReply({ ids, conversation, sender }: ReplyTarget): ReplyParts {
  const params: Record<string, ReplyValue> =
    conversation.type === 'group' ? { chatid: conversation.id } : { touser: sender.id };
  if (conversation.type !== 'group' && ids.agent_id) params.agentid = idValue(ids.agent_id);
  return { params, ...(ids.msg_id ? { messageId: ids.msg_id } : {}) };
}
