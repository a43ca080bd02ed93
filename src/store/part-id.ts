let last = 0;
let counter = 0;

/**
 * Ids for buffered parts that sort in creation order (time, then a counter), so the store
 * appends them at the end of its index instead of writing a random page per message.
 */
export function partId(now: number): string {
  if (now > last) {
    last = now;
    counter = 0;
  }
  return `${last.toString(36).padStart(9, '0')}${(counter++).toString(36).padStart(5, '0')}${process.pid.toString(36)}`;
}
