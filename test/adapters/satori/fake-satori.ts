import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { PNG } from '../../support/servers.js';

export const TOKEN = 'satori-token';
/** The login our tests drive: a QQ account served by Koishi's OneBot adapter. */
export const LOGIN = { platform: 'onebot', user: { id: '10001', name: 'bot' } };

/** An API call as the fake Satori server received it. */
export interface ApiCall {
  method: string;
  params: Record<string, unknown>;
  headers: IncomingHttpHeaders;
}

/**
 * A Satori server on 127.0.0.1 as satori.chat describes it (protocol/events, protocol/api):
 * `<base>/v1/events` takes IDENTIFY `{token, sn}`, closes 4004 on a wrong token, answers READY
 * with the logins, PING with PONG, and replays the events after the `sn` named (which Koishi's
 * server does not do: a resume there replays nothing); `POST <base>/v1/<resource>.<method>`
 * with `Authorization: Bearer`; `GET <base>/v1/proxy/<url>` and `/media/<name>` serve a PNG.
 */
export async function fakeSatori(options: { logins?: unknown[] } = {}) {
  const logins = options.logins ?? [{ sn: 1, status: 1, adapter: 'onebot', ...LOGIN }];
  const calls: ApiCall[] = [];
  const proxied: string[] = [];
  const identifies: Array<{ token?: string; sn?: number }> = [];
  const identified = new Set<WebSocket>();
  const state = { pong: true, connections: 0, mostAtOnce: 0, pings: 0 };
  /** Every event sent, by sn: a resume replays those after the sn it names. */
  const history: Array<{ sn: number; frame: string }> = [];
  let sn = 0;
  let sent = 0;

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname.startsWith('/media/')) {
      res.setHeader('content-type', 'image/png');
      res.end(PNG);
      return;
    }
    if (url.pathname.startsWith('/satori/v1/proxy/')) {
      proxied.push(decodeURIComponent(url.pathname.slice('/satori/v1/proxy/'.length)));
      res.setHeader('content-type', 'image/png');
      res.end(PNG);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.headers.authorization !== `Bearer ${TOKEN}`) {
        res.statusCode = 403;
        res.end('"invalid token"');
        return;
      }
      const method = url.pathname.replace(/^\/satori\/v1\//, '');
      const params = JSON.parse(Buffer.concat(chunks).toString() || '{}') as Record<string, unknown>;
      calls.push({ method, params, headers: req.headers });
      if (method === 'message.create') {
        res.end(JSON.stringify([{ id: `sent-${++sent}`, content: params.content }]));
        return;
      }
      res.statusCode = 404;
      res.end('"unknown API"');
    });
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (!req.url?.startsWith('/satori/v1/events')) {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws));
  });
  wss.on('connection', (socket: WebSocket) => {
    state.connections++;
    state.mostAtOnce = Math.max(state.mostAtOnce, wss.clients.size);
    socket.on('close', () => identified.delete(socket));
    socket.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { op: number; body?: { token?: string; sn?: number } };
      if (frame.op === 1) {
        state.pings++;
        if (state.pong) socket.send(JSON.stringify({ op: 2, body: {} }));
        return;
      }
      if (frame.op !== 3) return;
      identifies.push(frame.body ?? {});
      if (frame.body?.token !== TOKEN) {
        socket.close(4004, 'invalid token');
        return;
      }
      socket.send(JSON.stringify({ op: 4, body: { logins, proxy_urls: [] } }));
      identified.add(socket);
      const after = frame.body.sn;
      if (after !== undefined) for (const missed of history) if (missed.sn > after) socket.send(missed.frame);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;

  return {
    port,
    /** The channel's `url`. */
    url: `${base}/satori`,
    base,
    calls,
    proxied,
    identifies,
    state,
    open: () => identified.size,
    /** Send an event (its body; `sn` and `id` added) to every identified socket, and keep it for resumes; its sn. */
    event(body: Record<string, unknown>, frameSn = ++sn): number {
      const frame = JSON.stringify({ op: 0, body: { id: frameSn, sn: frameSn, ...body } });
      history.push({ sn: frameSn, frame });
      for (const socket of identified) socket.send(frame);
      return frameSn;
    },
    /** Drop every socket without a close frame, as a network failure does. */
    drop(): void {
      for (const socket of wss.clients) socket.terminate();
    },
    async close() {
      for (const socket of wss.clients) socket.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A message-created body from a member of QQ group `group` (or a direct chat with `direct`). */
export function satoriMessage(
  id: string,
  content: string,
  options: { user?: string; group?: string; direct?: boolean; timestamp?: number } = {},
): Record<string, unknown> {
  const user = options.user ?? '777';
  const channel = options.direct
    ? { id: `private:${user}`, type: 1 }
    : { id: options.group ?? '123456', type: 0, name: 'grp' };
  return {
    type: 'message-created',
    timestamp: options.timestamp ?? Date.now(),
    self_id: LOGIN.user.id,
    platform: LOGIN.platform,
    login: { sn: 1, status: 1, adapter: 'onebot', ...LOGIN },
    channel,
    ...(options.direct ? {} : { guild: { id: channel.id } }),
    user: { id: user, name: `user ${user}` },
    message: { id, content },
  };
}
