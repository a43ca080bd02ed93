import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { serve, type TestServer } from '../../support/servers.js';

export const BOT_TOKEN = 'kook-bot-token';
export const BOT = '10001';

/**
 * KOOK on 127.0.0.1: `GET /api/v3/gateway/index` (with our bot token) gives the socket URL; each
 * socket gets HELLO with a session id (`session-<n>`, or the one a resume names), a PING a PONG;
 * `event` sends an event frame with the next `sn` on the newest socket.
 */
export async function fakeKook() {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  const wsUrl = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/gateway?compress=0&token=abc`;
  const sockets: WebSocket[] = [];
  const paths: string[] = [];
  const received: any[] = [];
  const state = { hello: 0 as number, pong: true, sessions: 0 };
  let sn = 0;
  wss.on('connection', (socket, request) => {
    sockets.push(socket);
    paths.push(request.url ?? '');
    const query = new URL(request.url ?? '/', 'ws://x').searchParams;
    const sessionId = query.get('resume') === '1' ? query.get('sessionId') : `session-${++state.sessions}`;
    if (state.hello >= 0)
      socket.send(
        JSON.stringify({ s: 1, d: state.hello === 0 ? { code: 0, session_id: sessionId } : { code: state.hello } }),
      );
    socket.on('message', (data) => {
      const frame = JSON.parse(data.toString());
      received.push(frame);
      if (frame.s === 2 && state.pong) socket.send(JSON.stringify({ s: 3 }));
    });
  });
  const api: TestServer = await serve((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.headers.authorization !== `Bot ${BOT_TOKEN}`) {
      res.statusCode = 401;
      res.end('{"code":401,"message":"你的token无效"}');
    } else if (req.url === '/api/v3/gateway/index?compress=0') {
      res.end(JSON.stringify({ code: 0, message: '操作成功', data: { url: wsUrl } }));
    } else if (req.url === '/api/v3/user/me') {
      res.end(JSON.stringify({ code: 0, message: '操作成功', data: { id: BOT, username: 'bot', bot: true } }));
    } else {
      res.statusCode = 404;
      res.end('{"code":404}');
    }
  });
  return {
    api,
    paths,
    received,
    state,
    newest: () => sockets.at(-1)!,
    open: () => sockets.filter((socket) => socket.readyState === socket.OPEN).length,
    /** Send an event frame (`d` with its msg_id) on the newest socket; its sn. */
    event(d: unknown, frameSn = ++sn): number {
      sockets.at(-1)!.send(JSON.stringify({ s: 0, sn: frameSn, d }));
      return frameSn;
    },
    async close() {
      for (const socket of sockets) socket.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await api.close();
    },
  };
}
