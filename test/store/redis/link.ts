import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/** A TCP relay in front of redis-server whose link can hang (nothing passes, nothing closes) and come back. */
export interface Link {
  url: string;
  hang(): void;
  resume(): void;
  close(): Promise<void>;
}

export async function relay(port: number): Promise<Link> {
  const sockets = new Set<Socket>();
  let hung = false;
  const server: Server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
      if (hung) socket.pause();
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hang: () => {
      hung = true;
      for (const socket of sockets) socket.pause();
    },
    resume: () => {
      hung = false;
      for (const socket of sockets) socket.resume();
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
