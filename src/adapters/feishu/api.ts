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
