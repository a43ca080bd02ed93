import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

export const APP_TOKEN = 'xapp-1-A1-test';

/**
 * Slack's Socket Mode on 127.0.0.1: `apps.connections.open` (app token checked) hands out a
 * WebSocket URL; each socket gets `hello`; `envelope()` sends an events_api envelope on the
 * newest socket (or the `on`th opened); acknowledgements are collected, all of them and by
 * socket; `disconnect()` sends a refresh warning (or the `reason` given); with `state.afterHello`
 * set, every hello is followed at once by a disconnect of that reason.
 */
export async function fakeSlack() {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  const sockets: WebSocket[] = [];
  const acks: string[] = [];
  const acksBySocket: string[][] = [];
  const state = { opened: 0, mostAtOnce: 0, open: 0, urls: 0, afterHello: undefined as string | undefined };
  wss.on('connection', (socket) => {
    sockets.push(socket);
    const mine: string[] = [];
    acksBySocket.push(mine);
    state.opened++;
    state.open++;
    state.mostAtOnce = Math.max(state.mostAtOnce, state.open);
    socket.on('close', () => {
      state.open--;
    });
    socket.on('message', (data) => {
      const id = (JSON.parse(data.toString()) as { envelope_id: string }).envelope_id;
      acks.push(id);
      mine.push(id);
    });
    socket.send(JSON.stringify({ type: 'hello', num_connections: 1, connection_info: { app_id: 'A1' } }));
    if (state.afterHello)
      socket.send(JSON.stringify({ type: 'disconnect', reason: state.afterHello, debug_info: { host: 'x' } }));
  });
  const wsPort = (wss.address() as AddressInfo).port;
  const http: Server = createServer((req, res) => {
    if (req.url !== '/api/apps.connections.open' || req.headers.authorization !== `Bearer ${APP_TOKEN}`) {
      res.end(JSON.stringify({ ok: false, error: 'invalid_auth' }));
      return;
    }
    state.urls++;
    res.end(JSON.stringify({ ok: true, url: `ws://127.0.0.1:${wsPort}/link/?ticket=${state.urls}` }));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const live = () => sockets.filter((socket) => socket.readyState === socket.OPEN);
  const target = (on: number | undefined) => (on === undefined ? live().at(-1) : sockets[on]);
  return {
    api: `http://127.0.0.1:${(http.address() as AddressInfo).port}/api`,
    state,
    acks,
    acksBySocket,
    envelope(id: string, payload: unknown, retry = 0, on?: number) {
      target(on)?.send(
        JSON.stringify({
          envelope_id: id,
          type: 'events_api',
          payload,
          accepts_response_payload: false,
          retry_attempt: retry,
          retry_reason: retry ? 'timeout' : '',
        }),
      );
    },
    /** Any frame, as it is. */
    send(frame: unknown, on?: number) {
      target(on)?.send(JSON.stringify(frame));
    },
    disconnect(reason = 'warning') {
      live()
        .at(-1)
        ?.send(JSON.stringify({ type: 'disconnect', reason, debug_info: { host: 'x' } }));
    },
    async close() {
      for (const socket of sockets) socket.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

export const message = (ts: string, text: string) => ({
  type: 'event_callback',
  team_id: 'T1',
  api_app_id: 'A1',
  event_id: `Ev${ts.replace('.', '')}`,
  event_time: 1700000000,
  authorizations: [{ team_id: 'T1', user_id: 'UBOT', is_bot: true }],
  event: { type: 'message', channel: 'C1', channel_type: 'channel', user: 'U1', text, ts },
});
