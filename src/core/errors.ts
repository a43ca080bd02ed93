/**
 * One error base class for everything agent-intake throws on purpose. Stages throw; the HTTP
 * error middleware (src/http/errors.ts) is the one place that turns them into responses.
 */
/**
 * Every `code` an error answer (`{"error":{"code","message"}}`) can carry, and so every code an
 * IntakeError may take: a new one is added here and to the table in docs/http.md, which a test
 * holds equal to this list.
 */
export const ERROR_CODES = [
  // 400: the request must change
  'bad_json',
  'bad_shape',
  'too_deep',
  'too_many_keys',
  'forbidden_key',
  'bad_resume_point',
  'bad_limit',
  'bad_id',
  'bad_action',
  'bad_session_key',
  'bad_mode',
  'bad_hold',
  'bad_media_path',
  'bad_handshake',
  'bad_role',
  'self_id_missing',
  'no_key',
  'no_secret',
  'bad_request',
  'bad_max',
  'bad_wait',
  'bad_retry',
  'bad_lease',
  // 401, 403: who is asking
  'bad_signature',
  'stale_timestamp',
  'missing_token',
  'bad_token',
  'token_missing',
  'token_mismatch',
  'self_id_mismatch',
  'host_not_allowed',
  'cross_origin',
  'csrf_header_missing',
  'bad_verify_token',
  // 404, 405, 409, 413, 415, 499
  'not_found',
  'unknown_channel',
  'turn_unknown',
  'no_actions',
  'bot_not_connected',
  'no_handshake',
  'resume_point_ahead',
  'push_not_configured',
  'claims_not_configured',
  'unknown_claim',
  'claim_lost',
  'body_too_large',
  'unsupported_media_type',
  'client_closed',
  // 500, 502, 503, 504: the service, its store, a bot
  'internal',
  'bad_config',
  'middleware_failed',
  'body_already_read',
  'bot_api_error',
  'bot_api_refused',
  'bot_api_unreachable',
  'bot_disconnected',
  'starting',
  'unavailable',
  'shutting_down',
  'store_unavailable',
  'store_closed',
  'store_in_use',
  'outbox_full',
  'debounce_backlog',
  'too_many_streams',
  'too_many_polls',
  'bot_not_reading',
  'action_timeout',
  // never an answer: a failed attachment's resolution (its download fails) and a failed push attempt
  'bad_media',
  'no_token',
  'push_failed',
] as const;

/** A code of ERROR_CODES, or a failed download's `media_<kind>` (never an answer: see MediaError). */
export type ErrorCode = (typeof ERROR_CODES)[number] | `media_${FailureKind}`;

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
  readonly code: ErrorCode;
  readonly context: ErrorContext;

  constructor(code: ErrorCode, status: number, message: string, context: ErrorContext = {}) {
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
  constructor(message: string, context: ErrorContext = {}, code: ErrorCode = 'bad_signature') {
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
  constructor(code: ErrorCode, message: string, retryAfterSeconds: number, context: ErrorContext = {}) {
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
export const FAILURE_KINDS = [
  'blocked',
  'too_large',
  'timeout',
  'http',
  'network',
  'bad_url',
  'aborted',
  'disk',
] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

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
