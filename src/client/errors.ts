/**
 * What a call of the worker client failed with: the service's error answer (`status`, and the
 * `code` and `message` of its `{"error":{"code","message"}}`), or no answer at all (`status` 0,
 * `code` `unreachable`, the network error as `cause`).
 */
export class ClientError extends Error {
  override name = 'ClientError';
  /** The HTTP status of the answer; 0 when none came. */
  readonly status: number;
  /** The service's error code (docs/http.md#error-codes), `unreachable`, or `http_<status>` for an answer without one. */
  readonly code: string;

  constructor(status: number, code: string, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = status;
    this.code = code;
  }
}

export function isClientError(error: unknown): error is ClientError {
  return error instanceof ClientError;
}

/** The error an answer that is not a success carries, read from its body (which this consumes). */
export async function errorOf(response: Response, request: string): Promise<ClientError> {
  const text = await response.text().catch(() => '');
  let code = `http_${response.status}`;
  let message = `${request} answered ${response.status}${text ? `: ${text.slice(0, 200)}` : ''}`;
  try {
    const answer = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (typeof answer.error?.code === 'string') code = answer.error.code;
    if (typeof answer.error?.message === 'string') message = answer.error.message;
  } catch {
    // not the service's JSON (a proxy's page): the status and the start of the text say what it was
  }
  return new ClientError(response.status, code, message);
}

/** An answer worth asking again for: the service or a proxy in front of it is down, stopping or busy. */
export function isTransient(status: number): boolean {
  return status === 0 || status === 429 || status >= 500;
}
