import { request, type Dispatcher } from 'undici';
import { IntakeError } from '../core/errors.js';

/** One HTTP request an action is routed to: the path goes after the API's URL. */
interface ActionRequest {
  method: string;
  path: string;
  body: unknown;
  headers?: Readonly<Record<string, string>>;
}

/** How long an action may take, and how many bytes its answer may have (as a socket frame may). */
export interface ActionLimits {
  timeoutMs: number;
  maxBytes: number;
}

/**
 * An action on a bot's HTTP API: `POST <apiUrl>/<action>` with the params as JSON (OneBot), or
 * the request its `route` makes for the bot `botId` (Matrix, Satori); the JSON answer.
 */
export async function httpAction(
  api: {
    url: string;
    headers: Readonly<Record<string, string>>;
    setting?: string;
    route?(action: string, params: Record<string, unknown>, botId?: string): ActionRequest | Promise<ActionRequest>;
  },
  channel: string,
  action: string,
  params: Record<string, unknown>,
  { timeoutMs, maxBytes }: ActionLimits,
  dispatcher?: Dispatcher,
  botId?: string,
): Promise<unknown> {
  const context = { channel, stage: 'connections' };
  // A route throws before anything is sent: the caller's params cannot make this action.
  const routed = await api.route?.(action, params, botId);
  const url = `${api.url.replace(/\/$/, '')}${routed ? routed.path : `/${encodeURIComponent(action)}`}`;
  let response: Dispatcher.ResponseData;
  try {
    response = await request(url, {
      method: routed ? (routed.method as Dispatcher.HttpMethod) : 'POST',
      body: JSON.stringify(routed ? routed.body : params),
      headers: { 'content-type': 'application/json', ...api.headers, ...routed?.headers },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
      ...(dispatcher ? { dispatcher } : {}),
    });
  } catch (error) {
    const timedOut = (error as Error).name === 'TimeoutError' || /timeout/i.test((error as Error).message);
    if (timedOut)
      throw new IntakeError(
        'action_timeout',
        504,
        `The bot's API on channel "${channel}" did not answer "${action}" within ${timeoutMs} ms`,
        context,
      );
    throw new IntakeError(
      'bot_api_unreachable',
      502,
      `The bot's API on channel "${channel}" (${api.setting ?? 'apiUrl'}) could not be reached: ${(error as Error).message}`,
      context,
    );
  }
  // Read up to the limit, then stop: a bot answering without end must not fill this process.
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > maxBytes) {
      response.body.destroy();
      throw new IntakeError(
        'bot_api_error',
        502,
        `The bot's API on channel "${channel}" answered "${action}" with more than ${maxBytes} bytes (server.bodyLimitBytes)`,
        context,
      );
    }
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (response.statusCode === 401 || response.statusCode === 403) {
    throw new IntakeError(
      'bot_api_refused',
      502,
      `The bot's API on channel "${channel}" refused our accessToken (HTTP ${response.statusCode})`,
      context,
    );
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new IntakeError(
      'bot_api_error',
      502,
      `The bot's API on channel "${channel}" answered "${action}" with HTTP ${response.statusCode} and no JSON`,
      context,
    );
  }
}
