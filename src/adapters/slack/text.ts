/**
 * A Slack message's `text` as the agent reads it. Slack's formatting docs ("Formatting text for
 * app surfaces"): a user mention is `<@U123>` or `<@U123|name>`, a link `<https://…>` or
 * `<https://…|label>`, and `&`, `<`, `>` arrive as `&amp;` `&lt;` `&gt;`.
 *
 * Each markup is found by scanning, in one pass over the text: a regex for `<@U1|label>` or
 * `<https://…|label>` restarts at every `<@` or `<http` whose `>` never comes and reads on to
 * the end of the text each time (160 KB of them held the event loop for seconds).
 */

const GT = 0x3e;
const PIPE = 0x7c;

/** A character of a Slack id in a mention: `[A-Z0-9]`. */
function isIdChar(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39);
}

/**
 * The first `char` at or after a position, for positions that only grow: each search starts
 * where the last one ended, so all of them together read the text once.
 */
function nextOf(text: string, char: string): (from: number) => number {
  let found = -2;
  return (from) => {
    if (found !== -1 && found < from) found = text.indexOf(char, from);
    return found;
  };
}

/**
 * User mentions read as `@name` (`@U123` without a label) and the ids they name, in order:
 * `<@U123>` or `<@U123|name>`, where the id is `[A-Z0-9]+` and the label anything up to the
 * next `>`. A `<@` that makes no mention stays as it is.
 */
function readMentions(raw: string): { text: string; mentions: string[] } {
  const mentions: string[] = [];
  const nextGt = nextOf(raw, '>');
  let text = '';
  let copied = 0;
  for (let at = raw.indexOf('<@'); at >= 0; at = raw.indexOf('<@', at + 1)) {
    let end = at + 2;
    while (isIdChar(raw.charCodeAt(end))) end++;
    if (end === at + 2) continue;
    const after = raw.charCodeAt(end);
    if (after !== GT && after !== PIPE) continue;
    const close = nextGt(end);
    if (close < 0) continue;
    const id = raw.slice(at + 2, end);
    mentions.push(id);
    text += raw.slice(copied, at) + '@' + (after === GT ? id : raw.slice(end + 1, close));
    copied = close + 1;
    at = close;
  }
  return { text: text + raw.slice(copied), mentions };
}

/**
 * Links read as their URL: `<http://…>` or `<https://…>`, with or without `|label`, where the
 * URL is what comes before the first `|` or `>` (at least one character). Anything else in `<…>`
 * stays as it is.
 */
function readLinks(text: string): string {
  const nextGt = nextOf(text, '>');
  const nextPipe = nextOf(text, '|');
  let out = '';
  let copied = 0;
  for (let at = text.indexOf('<'); at >= 0; at = text.indexOf('<', at + 1)) {
    if (!text.startsWith('http', at + 1)) continue;
    const url = text.startsWith('s:', at + 5) ? at + 7 : text.startsWith(':', at + 5) ? at + 6 : -1;
    if (url < 0) continue;
    const close = nextGt(url);
    if (close < 0) continue;
    const pipe = nextPipe(url);
    const end = pipe >= 0 && pipe < close ? pipe : close;
    if (end === url) continue;
    out += text.slice(copied, at) + text.slice(at + 1, end);
    copied = close + 1;
    at = close;
  }
  return out + text.slice(copied);
}

/** The text the agent reads, and the users it mentions (ids, in order). */
export function slackText(raw: string): { text: string; mentions: string[] } {
  const { text, mentions } = readMentions(raw);
  return { text: readLinks(text).replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&'), mentions };
}
