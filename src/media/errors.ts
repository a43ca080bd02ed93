import { IntakeError, type ErrorContext } from '../errors.js';

/** Why a download failed, as the processed message's `mediaErrors[].reason` starts. */
export type FailureKind = 'blocked' | 'too_large' | 'timeout' | 'http' | 'network' | 'bad_url' | 'aborted';

/**
 * A download that failed or was refused. It never reaches a client (a failed attachment
 * becomes a `mediaErrors` entry), so the status is nominal: 502, an upstream failed.
 */
export class MediaError extends IntakeError {
  override name = 'MediaError';
  constructor(
    readonly kind: FailureKind,
    message: string,
    /** Worth another attempt (network errors, 5xx, 408, 429). */
    readonly retryable: boolean,
    /** What the server's `Retry-After` asked for, in ms. */
    readonly retryAfterMs?: number,
    context: ErrorContext = {},
  ) {
    super(`media_${kind}`, 502, message, { stage: 'media', ...context });
  }
}

export function isMediaError(error: unknown): error is MediaError {
  return error instanceof MediaError;
}
