/**
 * One error base class for everything agent-intake throws on purpose. Stages throw; the HTTP
 * error middleware (src/http/errors.ts) is the one place that turns them into responses.
 */
export interface ErrorContext {
  /** Configured channel id the error happened on. */
  channel?: string;
  /** Pipeline stage that threw (adapter, dedup, media, ...). */
  stage?: string;
  cause?: unknown;
}

export class IntakeError extends Error {
  override name = 'IntakeError';
  /** HTTP status this error maps to when it reaches a client. */
  readonly status: number;
  /** Stable machine-readable code, e.g. `bad_signature`. */
  readonly code: string;
  readonly context: ErrorContext;

  constructor(code: string, status: number, message: string, context: ErrorContext = {}) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.code = code;
    this.status = status;
    this.context = context;
  }
}

/** Configuration that cannot be used; thrown at start-up, names the setting. */
export class ConfigError extends IntakeError {
  override name = 'ConfigError';
  constructor(message: string, context: ErrorContext = {}) {
    super('bad_config', 500, message, context);
  }
}

/** A request the client must fix (400, 404, 413, 415). */
export class RequestError extends IntakeError {
  override name = 'RequestError';
}

/** Missing, malformed or mismatching signature (always 401, never 500). */
export class SignatureError extends IntakeError {
  override name = 'SignatureError';
  constructor(message: string, context: ErrorContext = {}, code = 'bad_signature') {
    super(code, 401, message, context);
  }
}

/**
 * A signed timestamp too far from this host's clock (`stale_timestamp`, 401): a replay of an old
 * delivery, or a clock that is off. A SignatureError, so it is refused and counted as one.
 */
export class StaleTimestampError extends SignatureError {
  override name = 'StaleTimestampError';
  constructor(message: string, context: ErrorContext = {}) {
    super(message, context, 'stale_timestamp');
  }
}

/** The service cannot take the request right now; the client should retry later. */
export class UnavailableError extends IntakeError {
  override name = 'UnavailableError';
  /** Seconds for the Retry-After header. */
  readonly retryAfterSeconds: number;
  constructor(code: string, message: string, retryAfterSeconds: number, context: ErrorContext = {}) {
    super(code, 503, message, context);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** `1 replica`, `3 replicas`: a count in a message, its noun agreeing (every noun here takes an `s`). */
export function counted(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

export function isIntakeError(error: unknown): error is IntakeError {
  return error instanceof IntakeError;
}
export function isSignatureError(error: unknown): error is SignatureError {
  return error instanceof SignatureError;
}
export function isConfigError(error: unknown): error is ConfigError {
  return error instanceof ConfigError;
}

/**
 * Why a download failed, as the processed message's `mediaErrors[].reason` starts. `disk`: the
 * media folder could not be written here (full, read-only, no permission): never retried.
 */
export type FailureKind = 'blocked' | 'too_large' | 'timeout' | 'http' | 'network' | 'bad_url' | 'aborted' | 'disk';

/**
 * A download that failed or was refused. It never reaches a client (a failed attachment
 * becomes a `mediaErrors` entry), so the status is nominal: 502, an upstream failed.
 */
export class MediaError extends IntakeError {
  override name = 'MediaError';
  constructor(
    readonly kind: FailureKind,
    message: string,
    /** Worth another attempt (network errors, 5xx, 408, 429; never a local disk error). */
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
