import { z } from 'zod';
import { RequestError, SignatureError } from '../../core/errors.js';
import { AccessToken } from '../kit/access-token.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder } from '../kit/event.js';
import { baseUrl, optionalText, requiredText } from '../kit/settings.js';
import {
  checkSignature,
  echoReply,
  shapeError,
  verifiedSecret,
  type Adapter,
  type Normalized,
  type PlatformReply,
} from '../kit/types.js';
import type { AdapterContext } from '../kit/access-token.js';
import { ENCODING_AES_KEY, WxCrypto, wxSignature } from '../wx/crypto.js';
import { issueToken, wxMediaResolver } from '../wx/media.js';
import { freshTimestamp, openOrRefuse, queryOf, wxEvents, wxQueryCheck, type WxSource } from '../wx/message.js';
import { envelopeEncrypt, parseXml, XML_BODIES, type XmlLimits } from '../wx/xml.js';
import type { ReplyParts, ReplyTarget } from '../../events/reply.js';

const settings = z.strictObject({
  /** The Token of 开发 > 基本配置 > 服务器配置: signs the URL of every callback. */
  token: optionalText(),
  /** The AppID (开发者ID): the account's bot id, and the receive id inside every ciphertext. */
  appId: requiredText('the AppID of the Official Account, 开发 > 基本配置'),
  /** The EncodingAESKey of safe mode (安全模式): with it, plaintext callbacks are refused. */
  encodingAESKey: optionalText().refine((key) => key === undefined || ENCODING_AES_KEY.test(key), {
    error: 'must be the 43-character EncodingAESKey (letters, digits, + and /)',
  }),
  /** The AppSecret, to fetch the access token that downloads media; without it media are not fetched. */
  appSecret: optionalText(),
  apiBaseUrl: baseUrl('https://api.weixin.qq.com'),
  /** How far the signed `timestamp` may be from now, seconds; 0 accepts any. */
  timestampToleranceSec: z.number({ error: 'must be a number of seconds' }).int().min(0).max(86_400).default(300),
});

/** WeChat Official Account (公众号) server callbacks. */
export const wechat = defineAdapter({
  name: 'wechat',
  // Openids are per account: a user has another openid in every account and in WeCom.
  namespace: 'wechat',
  secret: { setting: 'token', required: true },
  settings,
  // Receiving_standard_messages (developers.weixin.qq.com): no answer within 5 s and WeChat
  // drops the connection and tries again, three times in total: the last copy comes about 15 s
  // after the first.
  retryHorizonMs: 15_000,
  // The signed timestamp passes within timestampToleranceSec either way of our clock.
  replayHorizonMs: (options) => 2 * options.timestampToleranceSec * 1000,
  create: wechatAdapter,
});

const SUCCESS: PlatformReply = { status: 200, body: 'success', contentType: 'text/plain' };
/** The safe-mode envelope is `<xml><ToUserName/><Encrypt/></xml>` (more fields in compatible mode). */
const ENVELOPE: XmlLimits = { maxDepth: 4, maxKeys: 64 };

/**
 * WeChat Official Account callbacks. GET: the URL check, `signature` = sha1 of the sorted
 * [token, timestamp, nonce], answered with `echostr`. POST: XML, plain (`signature` in the query;
 * the body itself is not signed) or safe mode (`encrypt_type=aes`, `msg_signature` over
 * [token, timestamp, nonce, Encrypt], the message AES-encrypted for our AppID). Answered
 * `success` once recorded.
 */
export function wechatAdapter(
  channel: AdapterChannel,
  options: z.output<typeof settings>,
  context: AdapterContext,
): Adapter {
  const { appId, appSecret, apiBaseUrl, encodingAESKey } = options;
  const token = verifiedSecret(channel, options.token);
  const crypto = encodingAESKey ? new WxCrypto(encodingAESKey, appId) : undefined;
  const fail = (problem: string) => shapeError(channel, 'a WeChat callback', problem);
  const check = wxQueryCheck(channel, options.timestampToleranceSec, 'WeChat');
  const where = `channels[${channel.index}]`;
  const source: WxSource = {
    buildEvent: eventBuilder({ channel: channel.id, adapter: 'wechat', namespace: channel.namespace, idPrefix: 'wx' }),
    fail,
    botId: appId,
    groupChats: false,
  };
  const accessToken = appSecret
    ? new AccessToken(`wechat:token:${appId}`, context, (signal) =>
        issueToken(
          `${apiBaseUrl}/cgi-bin/token?grant_type=client_credential&appid=${encodeURIComponent(appId)}&secret=${encodeURIComponent(appSecret)}`,
          appSecret,
          'cgi-bin/token',
          signal,
        ),
      )
    : undefined;
  /** The message of a safe-mode delivery, decrypted by `verify`, for `parseBody` (keyed by the body bytes). */
  const opened = new WeakMap<Buffer, Buffer>();

  return {
    name: 'wechat',
    replyTo: wechatReply,
    channel: channel.id,
    namespace: channel.namespace,
    botIds: [appId],

    verify(delivery) {
      const safe = delivery.query.get('encrypt_type') === 'aes';
      if (!safe) {
        if (!token) return;
        // A plaintext body is not signed at all: with safe mode configured it is refused.
        if (crypto)
          throw new SignatureError(
            `Plaintext callback refused on channel "${channel.id}": ${where}.encodingAESKey is set, so WeChat must send safe-mode (encrypt_type=aes) callbacks; set 消息加解密方式 to 安全模式`,
            { channel: channel.id, stage: 'adapter' },
          );
        const timestamp = freshTimestamp(delivery, check);
        const expected = wxSignature(token, timestamp, queryOf(delivery, 'nonce', check));
        checkSignature(
          channel,
          'signature',
          delivery.query.get('signature') ?? undefined,
          expected,
          `(sha1 of token, timestamp and nonce) does not match: is ${where}.token the Token of 服务器配置?`,
        );
        return;
      }
      if (!crypto)
        throw new RequestError(
          'no_key',
          400,
          `Safe-mode callback on channel "${channel.id}": ${where}.encodingAESKey (the EncodingAESKey of 服务器配置) is needed to decrypt it and is not set`,
          { channel: channel.id, stage: 'adapter' },
        );
      const text = delivery.body.toString('utf8');
      const encrypt = envelopeEncrypt(text, ENVELOPE, fail);
      if (!encrypt) throw fail('a safe-mode callback needs <Encrypt>');
      if (token) {
        const timestamp = freshTimestamp(delivery, check);
        const expected = wxSignature(token, timestamp, queryOf(delivery, 'nonce', check), encrypt);
        checkSignature(
          channel,
          'msg_signature',
          delivery.query.get('msg_signature') ?? undefined,
          expected,
          `(sha1 of token, timestamp, nonce and Encrypt) does not match: is ${where}.token the Token of 服务器配置?`,
        );
      }
      opened.set(delivery.body, openOrRefuse(crypto, encrypt, check, `${where}.encodingAESKey and ${where}.appId`));
    },

    bodyTypes: XML_BODIES,

    parseBody(raw, limits) {
      const message = opened.get(raw);
      if (message) opened.delete(raw);
      return parseXml(message ?? raw, limits, fail);
    },

    normalize(body, delivery): Normalized {
      const xml = body as Record<string, unknown>;
      if (typeof xml !== 'object' || xml === null || Array.isArray(xml))
        throw fail('the message must be an <xml> element');
      return { ...wxEvents(xml, source, delivery.now), reply: SUCCESS };
    },

    handshake(delivery) {
      const echostr = delivery.query.get('echostr');
      if (!echostr)
        throw new RequestError(
          'bad_handshake',
          400,
          `GET on channel "${channel.id}" is the WeChat URL check and needs signature, timestamp, nonce and echostr query parameters`,
          { channel: channel.id, stage: 'adapter' },
        );
      // The signature does not cover echostr (in safe mode too: it is echoed, never decrypted),
      // so a captured check answers whatever echostr a caller sets: held to the tolerance, as POSTs.
      if (token) {
        const expected = wxSignature(token, freshTimestamp(delivery, check), queryOf(delivery, 'nonce', check));
        checkSignature(
          channel,
          'signature',
          delivery.query.get('signature') ?? undefined,
          expected,
          `(sha1 of token, timestamp and nonce) does not match: is ${where}.token the Token of 服务器配置?`,
        );
      }
      return echoReply(echostr);
    },

    resolveMedia: wxMediaResolver(
      apiBaseUrl,
      accessToken,
      `${where}.appSecret (the AppSecret) is needed to download WeChat media`,
    ),
  };
}

/**
 * A customer service message, `POST /cgi-bin/message/custom/send {touser, msgtype, ...}`: allowed
 * for 48 hours after the user's last message (WeChat 客服消息); the 5-second passive reply is
 * the webhook's own answer, long gone by the time the agent reads this.
 */
export const WECHAT_SERVICE_WINDOW_MS = 48 * 3600_000;

/** `touser` (the sender's openid) for a customer service message, until the 48-hour window closes. */
export function wechatReply({ ids, sender, receivedAt }: ReplyTarget): ReplyParts {
  return {
    params: { touser: sender.id },
    ...(ids.msg_id ? { messageId: ids.msg_id } : {}),
    expiresAt: receivedAt + WECHAT_SERVICE_WINDOW_MS,
  };
}
