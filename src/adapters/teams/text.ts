import { own, type Json, type PayloadReader } from '../kit/shape.js';

const entities = new Map([
  ['&nbsp;', ' '],
  ['&lt;', '<'],
  ['&gt;', '>'],
  ['&quot;', '"'],
  ['&#39;', "'"],
  ['&amp;', '&'],
]);

/**
 * A message's text as a person reads it, and whom it mentions. Teams writes a mention into the
 * text as `<at>Name</at>` and lists it in `entities` (`{type: "mention", mentioned: {id, name},
 * text}`; learn.microsoft.com/microsoftteams/platform/bots/how-to/conversations/channel-and-group-conversations):
 * our bot's own mention (`mentioned.id` is the activity's `recipient.id`) is taken out, as
 * Google Chat and Slack apps get the text, and the others read `@Name`.
 */
export function teamsText(
  read: PayloadReader,
  activity: Json,
  botId: string | undefined,
): { text: string; mentions: string[] } {
  let text = read.optText(own(activity, 'text'), 'text') ?? '';
  const mentions: string[] = [];
  read.optArray(own(activity, 'entities'), 'entities').forEach((value, i) => {
    const at = `entities[${i}]`;
    const entity = read.object(value, at);
    if (own(entity, 'type') !== 'mention') return;
    const mentioned = read.optObject(own(entity, 'mentioned'), `${at}.mentioned`) ?? {};
    const id = read.optText(own(mentioned, 'id'), `${at}.mentioned.id`);
    if (!id) return;
    mentions.push(id);
    const markup = read.optText(own(entity, 'text'), `${at}.text`);
    if (!markup) return;
    const name = read.optText(own(mentioned, 'name'), `${at}.mentioned.name`) ?? markup.replace(/<\/?at>/g, '');
    text = text.split(markup).join(id === botId ? '' : `@${name}`);
  });
  const plain = text
    .replace(/<\/?at>/g, '')
    .replace(/&(?:nbsp|lt|gt|quot|#39|amp);/g, (entity) => entities.get(entity)!);
  return { text: plain.replace(/[ \t]{2,}/g, ' ').trim(), mentions };
}
