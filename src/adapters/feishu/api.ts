import { request } from 'undici';
import { MediaError } from '../../core/errors.js';
import type { ResolvedMedia } from '../../events/inbound.js';
import { AccessToken, type AdapterContext } from '../kit/access-token.js';

/**
 * The tenant access token of a custom (self-built) app: `POST /open-apis/auth/v3/
 * tenant_access_token/internal {app_id, app_secret}` answers `{code: 0, tenant_access_token,
 * expire}` (seconds; 7200 today), shared by every instance through the store.
 */
export function feishuTenantToken(
  context: AdapterContext,
  apiBaseUrl: string,
  appId: string,
  appSecret: string,
): AccessToken {
  return new AccessToken(`feishu:token:${apiBaseUrl}:${appId}`, context, async (signal) => {
    const response = await request(`${apiBaseUrl}/open-apis/auth/v3/tenant_access_token/internal`, {
      method: 'POST',
      signal,
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ app_id: appId, app_secret: appSecret }),
    }).catch((error: unknown) => {
      throw new MediaError('network', `Feishu API unreachable: ${(error as Error).message}`, true);
    });
    const text = await response.body.text();
    let answer: { code?: unknown; msg?: unknown; tenant_access_token?: unknown; expire?: unknown } | undefined;
    try {
      answer = JSON.parse(text) as typeof answer;
    } catch {
      answer = undefined;
    }
    const token = answer?.tenant_access_token;
    if (response.statusCode !== 200 || answer?.code !== 0 || typeof token !== 'string' || token === '') {
      const words =
        answer && typeof answer.msg === 'string'
          ? `code ${String(answer.code)} (${answer.msg})`
          : `HTTP ${response.statusCode}`;
      throw new MediaError(
        'http',
        `getting the tenant access token failed: ${words}; check appId and appSecret`,
        response.statusCode >= 500,
      );
    }
    const seconds = typeof answer.expire === 'number' && answer.expire > 0 ? answer.expire : 7200;
    return { token, expiresInMs: seconds * 1000 };
  });
}

/** A message resource as a media ref: `<image|file>:<message_id>:<key>`. */
export function resourceRef(type: 'image' | 'file', messageId: string, key: string): string {
  return `${type}:${messageId}:${key}`;
}

/**
 * The download of a message's image or file: `GET /open-apis/im/v1/messages/:message_id/
 * resources/:file_key?type=image|file` with the tenant token (up to 100 MB; not for stickers,
 * cards or merged-forward children).
 */
export async function resourceDownload(
  token: AccessToken,
  apiBaseUrl: string,
  ref: string,
  signal: AbortSignal,
): Promise<ResolvedMedia> {
  const match = /^(image|file):([^:/?#]+):([^:/?#]+)$/.exec(ref);
  if (!match) throw new MediaError('bad_url', 'not a Feishu message resource', false);
  const [, type, messageId, key] = match as unknown as [string, string, string, string];
  const accessToken = await token.get(signal);
  return {
    url: `${apiBaseUrl}/open-apis/im/v1/messages/${encodeURIComponent(messageId)}/resources/${encodeURIComponent(key)}?type=${type}`,
    headers: { authorization: `Bearer ${accessToken}` },
  };
}

/**
 * Feishu's answer when the tenant token is no longer valid (a token dropped before its `expire`):
 * open.feishu.cn server-docs/api-call-guide/generic-error-code.
 */
const INVALID_TOKEN = 99991663;

/** A Feishu API refusal, in Feishu's words: `GET /open-apis/... answered code 230002 (Bot is not in the chat)`. */
export class FeishuApiError extends Error {
  override name = 'FeishuApiError';
  constructor(
    message: string,
    /** Feishu's `code`, when the answer carried one. */
    readonly feishuCode: number | undefined,
  ) {
    super(message);
  }
}

/**
 * `GET <apiBaseUrl><path>` with the tenant token; the answer's `data` when `code` is 0. A token
 * Feishu refuses is dropped and fetched once more; any other refusal throws a FeishuApiError.
 */
export async function feishuGet(
  token: AccessToken,
  apiBaseUrl: string,
  path: string,
  signal: AbortSignal,
): Promise<unknown> {
  for (let attempt = 0; ; attempt++) {
    const accessToken = await token.get(signal);
    const response = await request(`${apiBaseUrl}${path}`, {
      method: 'GET',
      signal,
      headers: { authorization: `Bearer ${accessToken}` },
    }).catch((error: unknown) => {
      throw new FeishuApiError(`Feishu API unreachable: ${(error as Error).message}`, undefined);
    });
    const text = await response.body.text();
    let answer: { code?: unknown; msg?: unknown; data?: unknown } | undefined;
    try {
      answer = JSON.parse(text) as typeof answer;
    } catch {
      answer = undefined;
    }
    if (response.statusCode === 200 && answer?.code === 0) return answer.data;
    const code = typeof answer?.code === 'number' ? answer.code : undefined;
    if (attempt === 0 && code === INVALID_TOKEN) {
      await token.invalidate();
      continue;
    }
    const words =
      code === undefined
        ? `HTTP ${response.statusCode}`
        : `code ${code}${typeof answer?.msg === 'string' ? ` (${answer.msg.slice(0, 200)})` : ''}`;
    throw new FeishuApiError(`GET ${path.split('?')[0]} answered ${words}`, code);
  }
}
