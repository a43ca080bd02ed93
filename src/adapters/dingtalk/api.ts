import { request } from 'undici';
import { MediaError } from '../../core/errors.js';
import { AccessToken, type AdapterContext, type IssuedToken } from '../kit/access-token.js';

/** What DingTalk's new API (api.dingtalk.com/v1.0) answers on failure: `{code, message, requestid}`. */
interface ApiFailure {
  code?: unknown;
  message?: unknown;
}

/** A failure of the DingTalk API, with its HTTP status and DingTalk's own `code`. */
export class DingTalkApiError extends MediaError {
  constructor(
    readonly httpStatus: number,
    readonly apiCode: string | undefined,
    message: string,
  ) {
    super('http', message, httpStatus >= 500 || httpStatus === 429);
  }

  /** The access token was refused (expired early, or revoked): fetch a new one and try again. */
  get badToken(): boolean {
    return this.httpStatus === 401 || this.apiCode === 'InvalidAuthentication';
  }
}

/**
 * POST JSON to a DingTalk API endpoint (a configured base URL, trusted like the rest of the
 * config) and parse its JSON answer. Failures become media errors in DingTalk's words.
 */
export async function dingtalkPost(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<Record<string, unknown>> {
  const response = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: JSON.stringify(body),
    signal,
  }).catch((error: unknown) => {
    throw new MediaError('network', `DingTalk API unreachable: ${(error as Error).message}`, true);
  });
  const text = await response.body.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const answer =
    typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  if (response.statusCode !== 200 || !answer) {
    const failure = (answer ?? {}) as ApiFailure;
    const code = typeof failure.code === 'string' ? failure.code : undefined;
    const words =
      [code, typeof failure.message === 'string' ? failure.message : undefined].filter(Boolean).join(': ') ||
      (answer ? `HTTP ${response.statusCode}` : 'an answer that is not a JSON object');
    throw new DingTalkApiError(response.statusCode, code, `DingTalk API answered ${response.statusCode}: ${words}`);
  }
  return answer;
}

/**
 * The app access token of an enterprise-internal app: `POST /v1.0/oauth2/accessToken
 * {appKey, appSecret}` answers `{accessToken, expireIn}` (seconds; 7200 today), shared by
 * every instance through the store.
 */
export function dingtalkAccessToken(
  context: AdapterContext,
  apiBaseUrl: string,
  clientId: string,
  appSecret: string,
): AccessToken {
  return new AccessToken(`dingtalk:token:${clientId}`, context, async (signal): Promise<IssuedToken> => {
    const answer = await dingtalkPost(
      `${apiBaseUrl}/v1.0/oauth2/accessToken`,
      { appKey: clientId, appSecret },
      {},
      signal,
    ).catch((error: unknown) => {
      if (error instanceof MediaError)
        throw new MediaError(error.kind, `getting the app access token failed: ${error.message}`, error.retryable);
      throw error;
    });
    const { accessToken, expireIn } = answer;
    if (typeof accessToken !== 'string' || accessToken === '')
      throw new MediaError('http', 'the DingTalk access token answer has no accessToken', false);
    const seconds = typeof expireIn === 'number' && Number.isFinite(expireIn) && expireIn > 0 ? expireIn : 7200;
    return { token: accessToken, expiresInMs: seconds * 1000 };
  });
}

/**
 * Exchange a message file's `downloadCode` for its temporary `downloadUrl`
 * (`POST /v1.0/robot/messageFiles/download {downloadCode, robotCode}` with the app access
 * token in `x-acs-dingtalk-access-token`). A token DingTalk refuses is dropped and fetched
 * once more.
 */
export async function dingtalkDownloadUrl(
  token: AccessToken,
  apiBaseUrl: string,
  robotCode: string,
  downloadCode: string,
  signal: AbortSignal,
): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const accessToken = await token.get(signal);
    try {
      const answer = await dingtalkPost(
        `${apiBaseUrl}/v1.0/robot/messageFiles/download`,
        { downloadCode, robotCode },
        { 'x-acs-dingtalk-access-token': accessToken },
        signal,
      );
      const url = answer.downloadUrl;
      if (typeof url !== 'string' || !/^https?:\/\//i.test(url))
        throw new MediaError('http', 'DingTalk messageFiles/download returned no downloadUrl', false);
      return url;
    } catch (error) {
      if (attempt === 0 && error instanceof DingTalkApiError && error.badToken) {
        await token.invalidate();
        continue;
      }
      throw error;
    }
  }
}
