import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { PNG } from '../../support/servers.js';

/** An API call as the fake Milky server received it. */
export interface ApiCall {
  action: string;
  params: Record<string, unknown>;
  authorization: string | undefined;
}

/**
 * A Milky server (what Lagrange.Milky or LLBot run) on 127.0.0.1, as SaltifyDev/milky's
 * communication guide describes it: `GET /event` upgraded to a WebSocket that sends one JSON
 * event per text frame, `POST /api/<name>` answering `{status, retcode, data}`, both refusing a
 * wrong `Authorization: Bearer` (or `?access_token=`) with HTTP 401. It also serves a PNG at
 * `/media/<name>`, as the QQ media host behind a `temp_url` would.
 */
export async function fakeMilky(options: { selfId: number; token: string }) {
  const calls: ApiCall[] = [];
  const handshakes: IncomingHttpHeaders[] = [];
  const open = new Set<WebSocket>();
  /** Sockets ever opened, and the most open at once (never past 1 for one channel). */
  const state = { connections: 0, mostAtOnce: 0 };
  let seq = 5000;
  /** The messages of each merged forward `get_forwarded_messages` reads, by forward id. */
  const forwards = new Map<string, unknown[]>();
  const authorized = (headers: IncomingHttpHeaders, url: URL) =>
    headers.authorization === `Bearer ${options.token}` || url.searchParams.get('access_token') === options.token;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname.startsWith('/media/')) {
      res.setHeader('content-type', 'image/png');
      res.end(PNG);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (!authorized(req.headers, url)) {
        res.statusCode = 401;
        res.end();
        return;
      }
      const action = url.pathname.replace(/^\/api\//, '');
      const params = JSON.parse(Buffer.concat(chunks).toString() || '{}') as Record<string, unknown>;
      calls.push({ action, params, authorization: req.headers.authorization });
      res.setHeader('content-type', 'application/json');
      if (action === 'get_forwarded_messages') {
        const messages = forwards.get(String(params.forward_id));
        res.end(
          JSON.stringify(
            messages
              ? { status: 'ok', retcode: 0, data: { messages } }
              : { status: 'failed', retcode: -404, message: 'forward not found' },
          ),
        );
        return;
      }
      const data = action.startsWith('send_') ? { message_seq: ++seq, time: 1718000100 } : {};
      res.end(JSON.stringify({ status: 'ok', retcode: 0, data }));
    });
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    handshakes.push(req.headers);
    if (url.pathname !== '/event' || !authorized(req.headers, url)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      open.add(ws);
      state.connections++;
      state.mostAtOnce = Math.max(state.mostAtOnce, open.size);
      ws.on('close', () => open.delete(ws));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    calls,
    handshakes,
    forwards,
    state,
    get open(): number {
      return open.size;
    },
    /** Send one event `{time, self_id, event_type, data}` to every socket open now. */
    event(type: string, data: Record<string, unknown>, time = 1718000000): void {
      const frame = JSON.stringify({ time, self_id: options.selfId, event_type: type, data });
      for (const ws of open) ws.send(frame);
    },
    /** Drop every socket without a close handshake (the server restarted). */
    drop(): void {
      for (const ws of open) ws.terminate();
    },
    async close(): Promise<void> {
      for (const ws of open) ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A `message_receive` group message's data, as a Milky server sends it. */
export function groupMessage(seq: number, segments: unknown[], senderId = 777, groupId = 123456) {
  return {
    message_scene: 'group',
    peer_id: groupId,
    message_seq: seq,
    sender_id: senderId,
    time: 1718000000,
    segments,
    group: { group_id: groupId, group_name: 'g' },
    group_member: { user_id: senderId, nickname: 'a', card: 'A', role: 'member' },
  };
}

/** A text segment. */
export const text = (value: string) => ({ type: 'text', data: { text: value } });
