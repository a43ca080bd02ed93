import type { MediaRef } from '../../events/inbound.js';
import { resourceRef } from './api.js';
import { own, type Json, type PayloadReader } from '../kit/shape.js';

/** What one Feishu message says: the text the agent reads, its attachments, who it @-mentions. */
export interface FeishuContent {
  text: string;
  media: MediaRef[];
  /** open_ids of the users (and bots) mentioned, in order. */
  mentions: string[];
}

/** A `mentions[]` entry: the placeholder in the text (`@_user_1`), who it is and their name. */
interface Mention {
  key: string;
  openId: string | undefined;
  name: string;
}

/** Placeholders for message types with nothing to read as text. */
const PLACEHOLDERS = new Map<string, string>(
  Object.entries({
    sticker: '[sticker]',
    interactive: '[card]',
    share_chat: '[shared group]',
    share_user: '[shared contact]',
    system: '[system message]',
    location: '[location]',
    todo: '[task]',
    vote: '[vote]',
    hongbao: '[red packet]',
    share_calendar_event: '[calendar event]',
    calendar: '[calendar event]',
    general_calendar: '[calendar event]',
    video_chat: '[video meeting]',
  }),
);

function mentionsOf(read: PayloadReader, message: Json): Mention[] {
  return read.optArray(own(message, 'mentions'), 'event.message.mentions').map((item, i) => {
    const at = `event.message.mentions[${i}]`;
    const mention = read.object(item, at, 'an object {key, id, name}');
    const id = read.optObject(own(mention, 'id'), `${at}.id`);
    return {
      key: read.optText(own(mention, 'key'), `${at}.key`) ?? '',
      openId: id ? read.optText(own(id, 'open_id'), `${at}.id.open_id`) : undefined,
      name: read.optText(own(mention, 'name'), `${at}.name`) ?? '',
    };
  });
}

/** A post (rich text) as readable lines: its title, then each paragraph's elements in order. */
function post(
  read: PayloadReader,
  content: Json,
  messageId: string,
  mentioned: string[],
): { text: string; media: MediaRef[] } {
  // Received posts are {title, content}; some clients send them under a locale ({"zh_cn": {...}}).
  const localized =
    own(content, 'content') === undefined
      ? Object.values(content).find(
          (value): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value),
        )
      : content;
  const body = localized ?? {};
  const lines: string[] = [];
  const media: MediaRef[] = [];
  const title = read.optText(own(body, 'title'), 'content.title');
  if (title) lines.push(title);
  read.optArray(own(body, 'content'), 'content.content').forEach((row, r) => {
    const parts: string[] = [];
    read.optArray(row, `content.content[${r}]`).forEach((item, i) => {
      const at = `content.content[${r}][${i}]`;
      const element = read.object(item, at, 'an element {tag, ...}');
      const tag = own(element, 'tag');
      const field = (key: string) => read.optText(own(element, key), `${at}.${key}`);
      if (tag === 'text' || tag === 'code_block' || tag === 'md') parts.push(field('text') ?? '');
      else if (tag === 'a')
        parts.push(field('href') ? `${field('text') ?? ''} (${field('href')})` : (field('text') ?? ''));
      else if (tag === 'at') {
        const id = field('user_id');
        if (id) mentioned.push(id);
        parts.push(`@${field('user_name') ?? id ?? ''}`);
      } else if (tag === 'emotion') parts.push(`:${field('emoji_type') ?? 'emoji'}:`);
      else if (tag === 'img' && field('image_key'))
        media.push({ ref: resourceRef('image', messageId, field('image_key') as string), type: 'image' });
      else if (tag === 'media' && field('file_key'))
        media.push({ ref: resourceRef('file', messageId, field('file_key') as string), type: 'video' });
    });
    const line = parts.join('').trim();
    if (line) lines.push(line);
  });
  return { text: lines.join('\n'), media };
}

/**
 * The content of an `im.message.receive_v1` message (`message.content` is a JSON string):
 * text with its `@_user_N` placeholders read as `@name`, a post flattened to lines, images and
 * files as message resources, other types as a bracketed word.
 */
export function feishuContent(
  read: PayloadReader,
  message: Json,
  messageType: string,
  messageId: string,
  parse: (json: string) => unknown,
): FeishuContent {
  const raw = read.text(own(message, 'content'), 'event.message.content');
  const content = read.object(parse(raw), 'event.message.content', 'a JSON object in a string');
  const mentions = mentionsOf(read, message);
  const mentioned = mentions.flatMap((mention) => (mention.openId ? [mention.openId] : []));
  const field = (key: string) => read.optText(own(content, key), `content.${key}`);
  const named = (text: string) =>
    mentions.reduce((out, mention) => (mention.key ? out.split(mention.key).join(`@${mention.name}`) : out), text);
  switch (messageType) {
    case 'text':
      return { text: named(field('text') ?? '').trim(), media: [], mentions: mentioned };
    case 'post': {
      const extra: string[] = [];
      const flat = post(read, content, messageId, extra);
      return {
        text: named(flat.text),
        media: flat.media,
        mentions: [...mentioned, ...extra.filter((id) => !mentioned.includes(id))],
      };
    }
    case 'image': {
      const key = field('image_key');
      return {
        text: '',
        media: key ? [{ ref: resourceRef('image', messageId, key), type: 'image' }] : [],
        mentions: mentioned,
      };
    }
    case 'file':
    case 'audio':
    case 'media': {
      const key = field('file_key');
      const fileName = field('file_name');
      const type = messageType === 'file' ? 'document' : messageType === 'audio' ? 'audio' : 'video';
      return {
        text: '',
        media: key ? [{ ref: resourceRef('file', messageId, key), type, ...(fileName ? { fileName } : {}) }] : [],
        mentions: mentioned,
      };
    }
    default:
      return { text: PLACEHOLDERS.get(messageType) ?? `[${messageType.slice(0, 32)}]`, media: [], mentions: mentioned };
  }
}
