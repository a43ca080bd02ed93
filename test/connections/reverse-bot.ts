import WebSocket from 'ws';
import type { Running } from '../support/helpers.js';

/*
 * A OneBot bot on a reverse WebSocket (what NapCat runs as a "WebSocket client"): a real `ws`
 * socket dialling the service's webhook URL.
 */

/** A bot connecting as NapCat does: Bearer token, X-Self-ID, the role in lower case. */
export function connect(
  service: Running,
  headers: Record<string, string>,
  path = '/webhooks/qq-ws',
  options: WebSocket.ClientOptions = {},
): Promise<WebSocket> {
  const socket = new WebSocket(`${service.url.replace('http', 'ws')}${path}`, { headers, ...options });
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(socket));
    socket.once('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk));
      response.on('end', () =>
        reject(
          Object.assign(new Error(`refused ${response.statusCode}`), {
            status: response.statusCode,
            body: JSON.parse(body || '{}'),
          }),
        ),
      );
    });
    socket.once('error', reject);
  });
}
/** NapCat's upgrade headers for bot `selfId` with `token`. */
export const napcat = (selfId = '10001000', token = 'tok') => ({
  authorization: `Bearer ${token}`,
  'x-self-id': selfId,
  'x-client-role': 'universal',
  'user-agent': 'OneBot/11',
});
/** The close code and reason `socket` ends with. */
export const closed = (socket: WebSocket) =>
  new Promise<{ code: number; reason: string }>((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
