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
  let time = '';
  let rest = Math.floor(now);
  for (let i = 0; i < 8; i++) {
    time = alphabet[rest % 64] + time;
    rest = Math.floor(rest / 64);
  }
  return time + randomPart();
}
