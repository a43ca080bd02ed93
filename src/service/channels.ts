import type { AdapterContext } from '../adapters/kit/access-token.js';
import { createAdapter, type Adapter } from '../adapters/index.js';
import type { BufferRule, TurnRule } from '../core/ports/index.js';
import type { ChannelConfig, Config, DebounceOptions, MediaOptions } from '../config/schema.js';
import { RequestError, type IntakeError } from '../core/errors.js';
import { isJsonType } from '../http/body.js';
import type { PlatformReply, RawDelivery } from '../events/transport.js';

const JSON_BODIES = { accepts: isJsonType, names: 'application/json' };

/** A request under a channel's webhook URL that its adapter takes. */
export interface WebhookPathRoute {
  /** The platform's answer to a refusal there (Matrix `{"errcode","error"}`); undefined: the standard one. */
  refusal(error: IntakeError): PlatformReply | undefined;
}

/** A configured channel and the adapter built for it. */
export interface Channel {
  readonly config: ChannelConfig;
  readonly adapter: Adapter;
}

/**
 * The configured channels, each with its adapter, built once at start (a bad setting fails
 * there). Every transport finds its channel here by id.
 */
export class Channels {
  private readonly byId = new Map<string, Channel>();

  constructor(
    private readonly config: Config,
    context?: AdapterContext,
  ) {
    for (const channel of config.channels)
      this.byId.set(channel.id, { config: channel, adapter: createAdapter(channel, undefined, context) });
  }

  /** The body types a channel's webhook takes: JSON, unless its adapter reads another format (XML). */
  bodyTypes(id: string): { accepts(contentType: string | undefined): boolean; names: string } {
    return this.byId.get(id)?.adapter.bodyTypes ?? JSON_BODIES;
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  get(id: string): Channel | undefined {
    return this.byId.get(id);
  }

  /** The channel of an id, or the 404 a delivery to an unconfigured one gets. */
  require(id: string): Channel {
    const channel = this.byId.get(id);
    if (!channel)
      throw new RequestError(
        'unknown_channel',
        404,
        `No channel "${id}" is configured (see "channels" in the configuration)`,
        { channel: id },
      );
    return channel;
  }

  /** Answer a GET on a channel's webhook URL (a platform's URL check), or the 405 of a POST-only one. */
  handshake(id: string, delivery: RawDelivery): PlatformReply {
    const { adapter } = this.require(id);
    if (!adapter.handshake)
      throw new RequestError('no_handshake', 405, `Channel "${id}" (${adapter.name}) takes POST only`, { channel: id });
    return adapter.handshake(delivery);
  }

  /**
   * The route of a request under a channel's webhook URL (`PUT /webhooks/<id>/_matrix/app/v1/
   * transactions/<txnId>`), when its adapter takes that method and path: how refusals read there.
   */
  webhookPath(id: string, method: string, path: string): WebhookPathRoute | undefined {
    const adapter = this.byId.get(id)?.adapter;
    const route = adapter?.webhookPath;
    const taken = (prefix: string) => {
      const rest = path.startsWith(prefix) ? path.slice(prefix.length) : '';
      return rest !== '' && !rest.includes('/');
    };
    if (!adapter || !route || route.method !== method || !route.prefixes.some(taken)) return undefined;
    return { refusal: (error) => adapter.refusal?.(error) };
  }

  ids(): string[] {
    return [...this.byId.keys()];
  }

  /** A channel's media settings (the global ones for an id no longer configured). */
  mediaOf(id: string): MediaOptions {
    return this.byId.get(id)?.config.media ?? this.config.media;
  }

  /** A channel's adapter, if configured. */
  adapterOf(id: string): Adapter | undefined {
    return this.byId.get(id)?.adapter;
  }

  values(): IterableIterator<Channel> {
    return this.byId.values();
  }

  /** The debounce options of a channel (its own, resolved over the global ones). */
  debounceOf(id: string): DebounceOptions {
    return this.byId.get(id)?.config.debounce ?? this.config.debounce;
  }

  /** The namespace of a channel's adapter (undefined: no such channel). */
  namespaceOf(id: string): string | undefined {
    return this.byId.get(id)?.adapter.namespace;
  }

  /** The `turns` of a channel (its own, resolved over the global ones). */
  turnsOf(id: string): TurnRule {
    return this.byId.get(id)?.config.turns ?? this.config.turns;
  }

  /** Whether any channel keeps agent turns. */
  turnsOn(): boolean {
    return (
      this.config.turns.mode !== 'off' || [...this.byId.values()].some(({ config }) => config.turns.mode !== 'off')
    );
  }

  /** Every debounce rule in use: the global one and each channel's. */
  debounceRules(): BufferRule[] {
    return [this.config.debounce, ...[...this.byId.values()].map(({ config }) => config.debounce)];
  }

  /**
   * Namespaces where more than one bot account can deliver the same message: those several
   * channels serve, and those of a channel that carries several bots (OneBot over HTTP or a
   * reverse WebSocket, a Satori server). Only there are deliveries correlated; a namespace one single-bot
   * channel serves (Telegram, Slack alone) costs nothing. Decided from the configuration, so
   * every instance agrees from the first message on.
   */
  correlatedNamespaces(): Set<string> {
    const correlated = new Set<string>();
    const served = new Set<string>();
    for (const { adapter } of this.byId.values()) {
      for (const namespace of adapter.namespaces ?? [adapter.namespace]) {
        if (adapter.severalBots || served.has(namespace)) correlated.add(namespace);
        served.add(namespace);
      }
    }
    return correlated;
  }
}
