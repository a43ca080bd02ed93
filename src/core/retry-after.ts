/**
 * How long a `Retry-After` header asks to wait, in ms: delay-seconds (`120`) or an HTTP date
 * (`Wed, 21 Oct 2015 07:28:00 GMT`, RFC 9110 §10.2.3), measured against `now` (the caller's
 * clock, so tests drive it). A date in the past is 0; anything longer is clamped to `maxMs`.
 * Undefined when the header is absent or unreadable (the caller falls back to its backoff).
 */
export function retryAfterMs(header: string | string[] | undefined, now: number, maxMs: number): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.min(Number(value) * 1000, maxMs);
  // A bare number that is not delay-seconds (`-5`, `1e3`) is not a date either.
  if (/^[-+\d.e]+$/i.test(value)) return undefined;
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, Math.min(at - now, maxMs)) : undefined;
}
