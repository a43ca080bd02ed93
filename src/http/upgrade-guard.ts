import type { Config } from '../config/schema.js';
import { RequestError } from '../core/errors.js';
import type { RawDelivery } from '../events/transport.js';
import { hostName, isLoopbackName, sameSite } from './guard.js';

/**
 * The browser checks of the operator API without a token (docs/http.md, "Browsers on the same
 * machine"), for the WebSocket upgrade of a socket channel without an access token
 * (`"verify": false`), which nothing else authenticates. A web page may open a WebSocket to any
 * address (browsers apply no same-origin rule to WebSockets and send the page's `Origin`), and
 * a page whose DNS name now points at this machine (DNS rebinding) sends its own name as `Host`.
 * Bots send no `Origin`, and reach the service by a name its operator knows: loopback, the
 * listen host, or `server.allowedHosts`. Throws the 403 that refuses the handshake.
 */
export function upgradeGuard(
  server: Pick<Config['server'], 'host' | 'allowedHosts'>,
): (channel: string, handshake: RawDelivery) => void {
  const allowed = new Set(server.allowedHosts.map(hostName));
  const anyHost = allowed.has('*');
  const listenHost = hostName(server.host);
  const header = (handshake: RawDelivery, name: string): string => {
    const value = handshake.headers[name];
    return (Array.isArray(value) ? value[0] : value) ?? '';
  };

  return function upgradeGuard(channel, handshake) {
    const context = { channel, stage: 'connections' };
    const host = header(handshake, 'host');
    const name = hostName(host);
    if (!anyHost && host !== '' && !isLoopbackName(name) && name !== listenHost && !allowed.has(name)) {
      throw new RequestError(
        'host_not_allowed',
        403,
        `Host "${host.slice(0, 100)}" is not a name a WebSocket to channel "${channel}" is answered for: the channel has no accessToken ("verify": false), so only loopback names (localhost, 127.0.0.1, [::1]), server.host ("${server.host}") and the names in server.allowedHosts are, so a web page cannot reach it through a DNS name of its own. If the bot reaches the service by this name, add "${name.slice(0, 100)}" to server.allowedHosts (INTAKE_ALLOWED_HOSTS), or give the channel an accessToken`,
        context,
      );
    }
    const origin = header(handshake, 'origin');
    if (origin !== '' && !sameSite(origin, host, allowed)) {
      throw new RequestError(
        'cross_origin',
        403,
        `A WebSocket to channel "${channel}" came from a page on ${origin.slice(0, 100)}: refused, so a web page cannot post events through your browser to a channel without an accessToken ("verify": false). Bots send no Origin: connect the bot directly, or give the channel an accessToken${origin === 'null' ? '' : '; if that page is yours, add its name to server.allowedHosts (INTAKE_ALLOWED_HOSTS)'}`,
        context,
      );
    }
  };
}
