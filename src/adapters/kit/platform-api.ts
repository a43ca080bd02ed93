import { request } from 'undici';
import { MediaError } from '../../core/errors.js';

/**
 * GET a platform API endpoint (a configured base URL, trusted like the rest of the config)
 * and parse its JSON. Failures become media errors with the platform's own words.
 */
export async function platformJson(
  url: string,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<unknown> {
  const response = await request(url, { method: 'GET', headers, signal }).catch((error: unknown) => {
    throw new MediaError('network', `platform API unreachable: ${(error as Error).message}`, false);
  });
  const text = await response.body.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (response.statusCode !== 200) {
    const detail = body as { description?: string; error?: { message?: string }; message?: string } | undefined;
    const words = detail?.description ?? detail?.error?.message ?? detail?.message ?? `HTTP ${response.statusCode}`;
    throw new MediaError('http', `platform API answered ${response.statusCode}: ${words}`, false);
  }
  return body;
}
