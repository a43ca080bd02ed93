import type { ActivationOptions } from '../config/activation.js';
import type { Trigger } from '../events/context.js';
import type { InboundEvent } from '../events/inbound.js';

/** What the test of one message knows of our bots. */
export interface OurBots {
  /** Whether an id is one of our bots in a namespace (the receiving bot's own id always is). */
  isOwnBot(namespace: string, id: string): boolean;
}

/** Whether the message a part quotes (by the id its receiving bot gives it) was sent by one of our bots (undefined: unknown). */
export type SentLookup = (
  namespace: string,
  botId: string | undefined,
  messageId: string,
) => Promise<boolean | undefined>;

/** The compiled activation rules of a channel: what in one message addresses our bots. */
export interface AddressRules {
  wakeWords: readonly string[];
  patterns: readonly RegExp[];
  replyToBot: boolean;
  commands: boolean;
}

/** The rules of a channel's activation settings, with its patterns compiled once (flag `i`). */
export function addressRules(activation: ActivationOptions): AddressRules {
  return {
    wakeWords: activation.wakeWords.map((word) => word.trim().toLowerCase()),
    patterns: activation.patterns.map((source) => new RegExp(source, 'i')),
    replyToBot: activation.replyToBot,
    commands: activation.commands,
  };
}

/**
 * What addresses one message to our bots, if anything, in this order: a mention of one of our
 * bots, a reply to a message one of them sent, a wake word it starts with, a pattern it
 * matches, a `/command`. Reads only the normalized event (what each adapter marked).
 */
export function triggerOf(
  event: InboundEvent,
  rules: AddressRules,
  bots: OurBots,
  sent: SentLookup,
): Trigger | undefined | Promise<Trigger | undefined> {
  if (event.kind !== 'message') return undefined;
  const ours = ourBot(event, bots);
  if (event.mentions.some(ours)) return 'mention';
  const replies = rules.replyToBot ? repliesToBot(event, ours, sent) : false;
  // Only a quote named by its id alone asks the store; every other message is decided here and now.
  if (replies instanceof Promise) return replies.then((yes) => (yes ? 'reply' : contentTrigger(event, rules)));
  return replies ? 'reply' : contentTrigger(event, rules);
}

/** What the text says: a wake word, a pattern, a command. */
function contentTrigger(event: InboundEvent, rules: AddressRules): Trigger | undefined {
  const text = afterMentions(event.text);
  if (rules.wakeWords.length > 0 && startsWithWord(text.toLowerCase(), rules.wakeWords)) return 'wake';
  if (rules.patterns.some((pattern) => pattern.test(event.text))) return 'pattern';
  if (rules.commands && /^\/\S/.test(text)) return 'command';
  return undefined;
}

/** Whether an account id, in the namespace of `event`, is one of our bots (the receiving one always is). */
export function ourBot(event: InboundEvent, bots: OurBots): (id: string) => boolean {
  return (id) => id === event.botId || bots.isOwnBot(event.namespace, id);
}

/** A reply to our bot: as the platform says, by the quoted author's id, else by the messages our bots sent. */
function repliesToBot(
  event: InboundEvent,
  ours: (id: string) => boolean,
  sent: SentLookup,
): boolean | Promise<boolean> {
  const fields = event.fields;
  const quoted = fields?.reply_to;
  if (!quoted) return false;
  // The platform's word first ("true": this bot wrote it; "false": a person did), then the author's id.
  if (fields.reply_to_bot !== undefined) return fields.reply_to_bot === 'true';
  if (fields.reply_to_sender) return ours(fields.reply_to_sender);
  return sent(event.namespace, event.botId, quoted).then((known) => known === true);
}

/**
 * The text after leading mentions and blanks: `@bot hello` and `<@U123> hello` read `hello`,
 * so a wake word or a command may follow a mention. Only `@…` and `<@…>` tokens at the start go.
 */
export function afterMentions(text: string): string {
  let rest = text.trimStart();
  for (;;) {
    const match = /^(?:<@[^>\s]{1,64}>|@\S{1,64})\s*/u.exec(rest);
    if (!match || match[0].length === 0) return rest;
    rest = rest.slice(match[0].length);
  }
}

/**
 * Whether `text` (lower case) starts with one of the words. A word ending in an ASCII letter or
 * digit must not run on into another (`bot` is not the start of `bottle`); scripts written
 * without spaces (`小助手今天…`) need no boundary.
 */
function startsWithWord(text: string, words: readonly string[]): boolean {
  return words.some((word) => {
    if (!text.startsWith(word)) return false;
    const next = text.charAt(word.length);
    return !(/[a-z0-9]$/.test(word) && /[a-z0-9_]/.test(next));
  });
}
