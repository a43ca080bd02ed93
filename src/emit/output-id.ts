import { customAlphabet } from 'nanoid';

const alphabet = '-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz';
const randomPart = customAlphabet(alphabet, 13);

/**
 * Ids of output events: 21 URL-safe characters like a nanoid, but the first 8 encode the
 * creation time (in an alphabet that sorts in ASCII order), so ids sort by creation and the
 * store's id index grows at its end instead of taking a random page write per message.
 * 13 random characters (78 bits) keep ids of one millisecond apart.
 */
export function outputId(now: number): string {
  const ms = Math.floor(now);
  if (ms !== lastMs) {
    lastMs = ms;
    lastPrefix = timePrefix(ms);
  }
  return lastPrefix + randomPart();
}

/** Many ids share a millisecond under load: its prefix is built once. */
let lastMs = -1;
let lastPrefix = '';

function timePrefix(ms: number): string {
  const chars = new Array<string>(8);
  let rest = ms;
  for (let i = 7; i >= 0; i--) {
    chars[i] = alphabet[rest % 64] as string;
    rest = Math.floor(rest / 64);
  }
  return chars.join('');
}
