/** A command (`/reset`) flushes its session's buffer at once, as the batch's last part. */
export function isCommand(text: string): boolean {
  return text.trimStart().startsWith('/');
}

/**
 * The test of `debounce.flushWords`: whether a whole message is one of them, trimmed and in
 * any case. Built once per rule; no words, no work per message.
 */
export function flushWordTest(words: readonly string[] | undefined): (text: string) => boolean {
  if (words === undefined || words.length === 0) return none;
  const known = new Set(words.map((word) => word.trim().toLowerCase()));
  // Lower case is never shorter (String.prototype.toLowerCase): a longer text is no word.
  let longest = 0;
  for (const word of known) longest = Math.max(longest, word.length);
  return function isFlushWord(text) {
    const trimmed = text.trim();
    return trimmed.length <= longest && known.has(trimmed.toLowerCase());
  };
}

const none = (): boolean => false;
