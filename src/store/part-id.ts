let last = 0;
let counter = 0;

/**
 * Ids for buffered parts: decimal integers that grow with time (milliseconds x 1024 + a
 * counter; within 2^53 until the year 2248), so the store keeps them in an integer key,
 * appended at the end of its table, instead of a text index with a random page per message.
 */
export function partId(now: number): string {
  if (now > last) {
    last = now;
    counter = 0;
  } else if (counter === 1023) {
    // More than 1024 parts in one millisecond: borrow the next millisecond.
    last++;
    counter = 0;
  } else counter++;
  return String(last * 1024 + counter);
}
