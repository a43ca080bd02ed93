import { z } from 'zod';
import { SignatureError } from '../../core/errors.js';
import { mediaTypeOf, sessionKeyOf, type InboundEvent, type MediaRef, type RevisionRef } from '../../events/inbound.js';
import type { ReplyParts, ReplyTarget, ReplyValue } from '../../events/reply.js';
import { defineAdapter, type AdapterChannel } from '../kit/descriptor.js';
import { eventBuilder } from '../kit/event.js';
import { JWT_REPLAY_HORIZON_MS, openIdKeys, verifyBearer } from '../kit/jwt.js';
import { baseUrl, optionalText } from '../kit/settings.js';
import { own, PayloadReader, type Json } from '../kit/shape.js';
import { shapeError, type Adapter, type Normalized, type RawDelivery } from '../kit/types.js';
import { teamsText } from './text.js';

/** The issuer of the tokens the Bot Connector service sends to a bot (learn.microsoft.com/azure/bot-service/rest-api/bot-framework-rest-connector-authentication). */
export const BOT_FRAMEWORK_ISSUER = 'https://api.botframework.com';

const settings = z.strictObject({
  /** The bot's Microsoft App ID: the tokens' audience, and the bot's id (`28:<appId>`). */
  appId: optionalText(),
  openIdMetadataUrl: baseUrl('https://login.botframework.com/v1/.well-known/openidconfiguration'),
  /** Only activities of this Microsoft Entra tenant are taken. */
  tenantId: optionalText(),
});

/** Microsoft Teams and other Bot Framework channels, by the activities the Bot Connector service POSTs. */
export const teams = defineAdapter({
  name: 'teams',
  namespace: 'teams',
  secret: { setting: 'appId', required: true, why: 'checks the audience of the Bearer JWT the Bot Connector signs' },
  settings,
  // The Bot Framework documents no redelivery of an activity: today's exact-id window (dedup.idTtlMs).
  retryHorizonMs: 300_000,
  replayHorizonMs: (options) => (options.appId === undefined ? 0 : JWT_REPLAY_HORIZON_MS),
  create: teamsAdapter,
});

const REPLY = { status: 200, body: {} };

/**
 * Bot Framework: each request carries `Authorization: Bearer <JWT>` from the Bot Connector,
 * checked against the keys of its OpenID metadata, for the bot's app id; its `serviceUrl` claim
 * must be the activity's (else a token for one endpoint could carry activities for another).
 * `message` activities are messages, `conversationUpdate` a notice, `messageUpdate` /
 * `messageDelete` (Teams' edit and soft delete) revise the message, `typing` holds its sender's
 * buffer; anything else is acknowledged.
 */
export function teamsAdapter(channel: AdapterChannel, options: z.output<typeof settings>): Adapter {
  const appId = channel.verify ? options.appId : undefined;
  const keys = appId ? openIdKeys(options.openIdMetadataUrl) : undefined;
  const { tenantId } = options;
  const namespace = channel.namespace;
  const buildEvent = eventBuilder({ channel: channel.id, adapter: 'teams', namespace, idPrefix: 'teams' });
  const fail = (problem: string) => shapeError(channel, 'a Bot Framework activity', problem);
  /** The claims of each verified delivery, for `normalize` to hold the activity to. */
  const claims = new WeakMap<RawDelivery, { serviceUrl: unknown; endorsements: string[] | undefined }>();
  const endorsed = new WeakMap<object, string[] | undefined>();
  const refuse = (what: string) =>
    new SignatureError(`Signature mismatch on channel "${channel.id}": ${what}`, {
      channel: channel.id,
      stage: 'adapter',
    });

  return {
    name: 'teams',
    channel: channel.id,
    namespace,

    async verify(delivery) {
      if (!appId || !keys) return;
      const { payload, protectedHeader } = await verifyBearer(channel, delivery, keys, {
        issuer: BOT_FRAMEWORK_ISSUER,
        audience: appId,
        platform: 'Bot Framework',
        // The algorithms the Bot Framework SDK accepts (botframework-connector, channelValidation).
        algorithms: ['RS256', 'RS384', 'RS512'],
      });
      // Read once per token (its claims are kept while it is valid): the key set is copied on each read.
      if (!endorsed.has(payload)) endorsed.set(payload, keys.endorsements(protectedHeader.kid));
      claims.set(delivery, { serviceUrl: payload.serviceUrl, endorsements: endorsed.get(payload) });
    },

    normalize(body, delivery): Normalized {
      const read = new PayloadReader(fail);
      const activity = read.object(body, 'the body', '{"type":...,"serviceUrl":...,"conversation":...}');
      const type = read.text(own(activity, 'type'), 'type');
      const serviceUrl = read.text(own(activity, 'serviceUrl'), 'serviceUrl');
      const verified = claims.get(delivery);
      if (appId && verified?.serviceUrl !== serviceUrl)
        throw refuse(`the token's serviceUrl claim is not the activity's serviceUrl ${JSON.stringify(serviceUrl)}`);
      // A key that lists endorsements signs only for those channels (msteams, webchat, ...).
      const channelId = read.optText(own(activity, 'channelId'), 'channelId');
      if (appId && verified?.endorsements && !verified.endorsements.includes(channelId ?? ''))
        throw refuse(`the signing key does not endorse the activity's channelId ${JSON.stringify(channelId ?? null)}`);
      const channelData = read.optObject(own(activity, 'channelData'), 'channelData') ?? {};
      const conversationIn = read.object(own(activity, 'conversation'), 'conversation');
      const tenant =
        read.optText(
          own(read.optObject(own(channelData, 'tenant'), 'channelData.tenant') ?? {}, 'id'),
          'channelData.tenant.id',
        ) ?? read.optText(own(conversationIn, 'tenantId'), 'conversation.tenantId');
      if (tenantId && tenant !== tenantId)
        throw refuse(`the activity is from tenant ${JSON.stringify(tenant ?? null)}, not ${tenantId}`);
      const conversationId = read.text(own(conversationIn, 'id'), 'conversation.id');
      const conversationType = read.optText(own(conversationIn, 'conversationType'), 'conversation.conversationType');
      const personal = conversationType ? conversationType === 'personal' : own(conversationIn, 'isGroup') !== true;
      const conversation = { type: personal ? ('private' as const) : ('group' as const), id: conversationId };
      const from = read.optObject(own(activity, 'from'), 'from') ?? {};
      const senderId = read.optText(own(from, 'id'), 'from.id') ?? 'unknown';
      const senderName = read.optText(own(from, 'name'), 'from.name');
      const sender = { id: senderId, ...(senderName ? { name: senderName } : {}) };
      const recipient = read.optObject(own(activity, 'recipient'), 'recipient') ?? {};
      const botId = read.optText(own(recipient, 'id'), 'recipient.id') || undefined;
      if (type === 'typing') {
        return {
          events: [],
          reply: REPLY,
          typing: [{ sessionKey: sessionKeyOf(namespace, conversation), senderId }],
        };
      }
      const eventType = read.optText(own(channelData, 'eventType'), 'channelData.eventType');
      const edit = type === 'messageUpdate' && eventType === 'editMessage';
      const deletion = type === 'messageDelete';
      if (type !== 'message' && type !== 'conversationUpdate' && !edit && !deletion)
        return { events: [], ignored: 1, reply: REPLY };
      const id = read.text(own(activity, 'id'), 'id');
      const stamp = read.optText(own(activity, 'timestamp'), 'timestamp');
      const at = stamp === undefined ? undefined : Date.parse(stamp);
      if (at !== undefined && !Number.isFinite(at))
        throw fail(`timestamp must be an ISO 8601 time, got "${stamp!.slice(0, 40)}"`);
      const timestamp = read.timestamp(at, 'timestamp', 'ms', delivery.now);
      const fields: Record<string, string> = {
        service_url: serviceUrl,
        conversation_id: conversationId,
        activity_id: id,
      };
      if (tenant) fields.tenant_id = tenant;
      const replyToId = read.optText(own(activity, 'replyToId'), 'replyToId');
      if (replyToId && type === 'message') fields.reply_to = replyToId;
      const base = { botId, conversation, sender, timestamp, fields, raw: activity };
      if (type === 'conversationUpdate' || deletion) {
        const revises: RevisionRef | undefined = deletion ? { kind: 'recall', messageId: id } : undefined;
        return {
          events: [
            buildEvent({
              ...base,
              kind: 'notice',
              detail: deletion ? 'messageDelete' : 'conversationUpdate',
              // A message is deleted once; a conversation update has no id of its own worth keeping apart.
              platformId: deletion ? `${id}:deleted` : `${id}:${type}`,
              text: '',
              revises,
            }),
          ],
          reply: REPLY,
        };
      }
      const { text, mentions } = teamsText(read, activity, botId);
      const media = edit ? [] : mediaOf(read, activity);
      if (edit) fields.edited_text = text;
      const event: InboundEvent = buildEvent({
        ...base,
        kind: 'message',
        detail: conversation.type,
        subType: edit ? 'edited' : undefined,
        platformId: edit ? `${id}:edited:${stamp ?? ''}` : id,
        text: edit ? `(edited) ${text}` : text,
        media,
        mentions,
        revises: edit ? { kind: 'edit', messageId: id, senderId } : undefined,
      });
      return { events: [event], reply: REPLY };
    },

    replyTo: teamsReply,
  };
}

const FILE_DOWNLOAD = 'application/vnd.microsoft.teams.file.download.info';

/**
 * Attachments as media: a file sent to the bot (`application/vnd.microsoft.teams.file.download.info`)
 * by its `content.downloadUrl`, a short-lived pre-authenticated link
 * (learn.microsoft.com/microsoftteams/platform/bots/how-to/bots-filesv4); an image or other
 * typed file by its `contentUrl`. Cards and Teams' HTML copy of the text are not media.
 */
function mediaOf(read: PayloadReader, activity: Json): MediaRef[] {
  return read.optArray(own(activity, 'attachments'), 'attachments').flatMap((value, i) => {
    const at = `attachments[${i}]`;
    const attachment = read.object(value, at);
    const contentType = read.optText(own(attachment, 'contentType'), `${at}.contentType`) ?? '';
    const fileName = read.optText(own(attachment, 'name'), `${at}.name`);
    const named = fileName ? { fileName } : {};
    if (contentType === FILE_DOWNLOAD) {
      const content = read.optObject(own(attachment, 'content'), `${at}.content`) ?? {};
      const url = read.optText(own(content, 'downloadUrl'), `${at}.content.downloadUrl`);
      return url ? [{ url, ...named }] : [];
    }
    const url = read.optText(own(attachment, 'contentUrl'), `${at}.contentUrl`);
    if (!url || contentType === 'text/html' || contentType.startsWith('application/vnd.microsoft.')) return [];
    const typed = /^[\w.+-]+\/[\w.+-]+$/.test(contentType);
    return [{ url, ...(typed ? { mimeType: contentType, type: mediaTypeOf(contentType) } : {}), ...named }];
  });
}

/** `POST {serviceUrl}/v3/conversations/{conversationId}/activities/{activityId}`: a reply to the activity. */
export function teamsReply({ ids, conversation }: ReplyTarget): ReplyParts {
  const params: Record<string, ReplyValue> = { conversationId: ids.conversation_id ?? conversation.id };
  if (ids.service_url) params.serviceUrl = ids.service_url;
  if (ids.activity_id) params.activityId = ids.activity_id;
  return { params, ...(ids.activity_id ? { messageId: ids.activity_id } : {}) };
}
