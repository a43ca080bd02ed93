import { buildConnector, Client, type Dispatcher } from 'undici';
import { guardedLookup } from './guard.js';

/**
 * Where a media stage's connections come from. Each request gets a connection of its own,
 * destroyed when the request is done with it: a download then holds exactly one connection
 * for exactly as long as it holds its slot, and a body we do not want is cut, not drained.
 */
export interface MediaConnections {
  /** A connection to `origin`, resolved through the guarded lookup unless `exempt` (media.allowHosts). */
  open(origin: URL, exempt: boolean): Connection;
  /** Destroy every connection still open (their requests fail). */
  close(): Promise<void>;
}

/** One request's connection. */
export interface Connection {
  dispatcher: Dispatcher;
  /** Destroy the socket; resolves once it is closed. */
  close(): Promise<void>;
}

export interface MediaConnectionsOptions {
  /** Resolver that refuses blocked addresses (a fake one in tests). @default guardedLookup */
  lookup?: typeof guardedLookup;
  /** Wrap the socket connector, e.g. to count sockets in tests. @default none */
  wrap?: (connect: buildConnector.connector) => buildConnector.connector;
}

/** Connections for one media stage; nothing is shared between stages or kept at module level. */
export function mediaConnections(options: MediaConnectionsOptions = {}): MediaConnections {
  const wrap = options.wrap ?? ((connect) => connect);
  // The guarded connector hands the lookup's checked addresses to the socket: the address checked is the address used.
  const guarded = wrap(buildConnector({ lookup: (options.lookup ?? guardedLookup) as never }));
  const exempt = wrap(buildConnector({}));
  const live = new Set<Client>();
  return {
    open(origin, isExempt) {
      const client = new Client(origin.origin, { connect: isExempt ? exempt : guarded, pipelining: 1 });
      live.add(client);
      return {
        dispatcher: client,
        close: async () => {
          live.delete(client);
          await client.destroy().catch(() => undefined);
        },
      };
    },
    async close() {
      await Promise.all([...live].map((client) => client.destroy().catch(() => undefined)));
      live.clear();
    },
  };
}
