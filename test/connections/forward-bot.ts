import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

/** An action frame as a forward OneBot implementation receives it. */
export interface ActionFrame {
  action: string;
  params: Record<string, unknown>;
  echo: string;
}

/**
 * A forward OneBot v11 implementation (what NapCat or Lagrange run with a "ws server" adapter):
 * a real WebSocket server on 127.0.0.1 that checks `Authorization: Bearer <token>`, answers
 * `get_login_info` with its QQ number and every other action with `{status: "ok"}`, and sends
 * the events a test gives it to every socket connected now. It counts how many sockets were
 * ever open at once, which must never pass 1 for one bot.
 */
export async function forwardBot(options: { selfId: number; token?: string; port?: number }) {
  const handshakes: IncomingMessage['headers'][] = [];
  const state = { connections: 0, mostAtOnce: 0, refused: 0 };
  // A wrong token is refused at the handshake (HTTP 401), as NapCat does.
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: options.port ?? 0,
    verifyClient: ({ req }, done) => {
      handshakes.push(req.headers);
      const ok = options.token === undefined || req.headers.authorization === `Bearer ${options.token}`;
      if (!ok) state.refused++;
      done(ok, 401, 'wrong access token');
    },
  });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  const open = new Set<WebSocket>();
  const actions: ActionFrame[] = [];
  wss.on('connection', (socket) => {
    open.add(socket);
    state.connections++;
    state.mostAtOnce = Math.max(state.mostAtOnce, open.size);
    socket.on('close', () => open.delete(socket));
    socket.send(
      JSON.stringify({
        time: Math.floor(Date.now() / 1000),
        self_id: options.selfId,
        post_type: 'meta_event',
        meta_event_type: 'lifecycle',
        sub_type: 'connect',
      }),
    );
    socket.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as ActionFrame;
      actions.push(frame);
      const body =
        frame.action === 'get_login_info'
          ? { user_id: options.selfId, nickname: 'bot' }
          : { message_id: 7, via: options.selfId };
      socket.send(JSON.stringify({ status: 'ok', retcode: 0, data: body, echo: frame.echo }));
    });
  });
  const { port } = wss.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    port,
    state,
    actions,
    handshakes,
    /** How many sockets are open now. */
    get open(): number {
      return open.size;
    },
    /** Send one event to every socket open now; how many got it. */
    send(event: unknown): number {
      for (const socket of open) socket.send(JSON.stringify(event));
      return open.size;
    },
    /** Drop every socket without a close handshake (the bot restarted). */
    drop(): void {
      for (const socket of open) socket.terminate();
    },
    async close(): Promise<void> {
      for (const socket of open) socket.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/** A group message as OneBot reports it, from `selfId`'s point of view. */
export function groupMessage(selfId: number, messageId: number, text: string, groupId = 123456789, userId = 12345678) {
  return {
    time: 1718000001,
    self_id: selfId,
    post_type: 'message',
    message_type: 'group',
    sub_type: 'normal',
    message_id: messageId,
    group_id: groupId,
    user_id: userId,
    sender: { user_id: userId, nickname: 'u', card: '' },
    message: [{ type: 'text', data: { text } }],
    raw_message: text,
    font: 0,
  };
}
