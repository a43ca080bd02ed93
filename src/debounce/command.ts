/** A command (`/reset`) flushes its session's buffer at once, as the batch's last part. */
export function isCommand(text: string): boolean {
  return text.trimStart().startsWith('/');
}
