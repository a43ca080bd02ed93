import { request } from 'undici';
import { MediaError } from '../../core/errors.js';
import type { MediaRef, ResolvedMedia } from '../../events/inbound.js';
import type { AccessToken, IssuedToken } from '../kit/access-token.js';
import { platformJson } from '../kit/platform-api.js';

// Media of WeChat and WeCom messages come as a media_id, exchanged at
// `GET <api>/cgi-bin/media/get?access_token=…&media_id=…` (WeChat api_getmedia, WeCom 96486).
// Both APIs answer errors as JSON with HTTP 200 (`{"errcode":40007,"errmsg":"invalid media_id"}`),
// and WeChat answers a video's media_id with `{"video_url": …}`.

/** errcodes that mean the access token is no longer valid: fetch another and try once more. */
const TOKEN_ERRORS = new Set([40001, 40014, 42001]);

interface PlatformAnswer {
  errcode?: unknown;
  errmsg?: unknown;
  access_token?: unknown;
  expires_in?: unknown;
  video_url?: unknown;
}

/** `errcode N (errmsg)` of a platform answer, or undefined when it is not an error. */
function errorOf(answer: PlatformAnswer | undefined): { code: number; words: string } | undefined {
  const code = answer?.errcode;
  if (typeof code !== 'number' || code === 0) return undefined;
  return { code, words: `errcode ${code}${typeof answer?.errmsg === 'string' ? ` (${answer.errmsg})` : ''}` };
}

/** Fetch an access token at `url` (its secret hidden in every message), as `AccessToken` wants it. */
export async function issueToken(url: string, secret: string, what: string, signal: AbortSignal): Promise<IssuedToken> {
  const answer = (await platformJson(url, {}, signal).catch((error: unknown) => {
    throw new MediaError('http', `${what} failed: ${(error as Error).message.replaceAll(secret, '<secret>')}`, false);
  })) as PlatformAnswer | undefined;
  const error = errorOf(answer);
  if (error) throw new MediaError('http', `${what} answered ${error.words}`, false);
  const token = answer?.access_token;
  const expiresIn = answer?.expires_in;
  if (typeof token !== 'string' || token === '')
    throw new MediaError('http', `${what} returned no access_token`, false);
  return { token, expiresInMs: (typeof expiresIn === 'number' && expiresIn > 0 ? expiresIn : 7200) * 1000 };
}

/** Drop a response body unread (its stream reports the abort as an error nobody needs). */
function discard(body: { on(event: 'error', listener: () => void): unknown; destroy(): unknown }): void {
  body.on('error', () => undefined);
  body.destroy();
}

/** Small JSON or text answers are read for an errcode; media bytes are left for the download. */
const ANSWER_TYPES = /json|text\/plain/i;
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * The resolver of one channel: asks media/get once to see whether it answers the file, an error
 * or (WeChat video) a `video_url`, and hands the media stage the URL to download. A token the
 * platform refuses is dropped and a new one tried once. The token never reaches a message.
 */
export function wxMediaResolver(
  apiBaseUrl: string,
  token: AccessToken | undefined,
  missing: string,
): (ref: MediaRef, signal: AbortSignal) => Promise<ResolvedMedia> {
  return async function resolveMedia(ref, signal) {
    if (!token) throw new MediaError('bad_url', missing, false);
    if (!ref.ref) throw new MediaError('bad_url', 'the attachment has no media_id', false);
    for (let attempt = 0; ; attempt++) {
      const accessToken = await token.get(signal);
      const hide = (text: string) => text.replaceAll(accessToken, '<token>');
      const url = `${apiBaseUrl}/cgi-bin/media/get?access_token=${encodeURIComponent(accessToken)}&media_id=${encodeURIComponent(ref.ref)}`;
      const response = await request(url, { method: 'GET', signal }).catch((error: unknown) => {
        throw new MediaError('network', `media/get unreachable: ${hide((error as Error).message)}`, false);
      });
      const type = String(response.headers['content-type'] ?? '');
      const length = Number(response.headers['content-length'] ?? Number.NaN);
      if (response.statusCode !== 200) {
        discard(response.body);
        throw new MediaError('http', `media/get answered HTTP ${response.statusCode}`, response.statusCode >= 500);
      }
      if (!ANSWER_TYPES.test(type) || length > MAX_ANSWER_BYTES) {
        // The file itself: the media stage downloads it again under its own limits and sniffing.
        discard(response.body);
        return { url };
      }
      const text = await response.body.text();
      let answer: PlatformAnswer | undefined;
      try {
        answer = JSON.parse(text) as PlatformAnswer;
      } catch {
        return { url }; // a text file
      }
      const error = errorOf(answer);
      if (error && TOKEN_ERRORS.has(error.code) && attempt === 0) {
        await token.invalidate();
        continue;
      }
      if (error) throw new MediaError('http', `media/get answered ${error.words}`, false);
      if (typeof answer?.video_url === 'string' && /^https?:\/\//i.test(answer.video_url))
        return { url: answer.video_url };
      return { url };
    }
  };
}
