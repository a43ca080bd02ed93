import { nanoid } from 'nanoid';
import type { ConnectionView } from '../../events/connection.js';
import type { InstanceBus, InstanceCounters, RelayAnswer, RelayedAction } from '../../core/ports/index.js';
import { clock } from './codec.js';
import { blockingOptions, connect, type ConnectionLogger, isClusterUrl, type ScriptedRedis } from './connections.js';

/** A relayed action on the wire: who asked (its answer channel) and under which id. */
interface Request {
  id: string;
  replyTo: string;
  action: RelayedAction;
}

/** What one instance published of its connections: kept until `until`. */
interface Shared {
  until: number;
  views: ConnectionView[];
}

/** Published connections of an instance not heard from for this long are deleted (its entries expired long before). */
const FORGET_AFTER_MS = 3_600_000;

/**
 * What instances on one Redis tell each other, and their named leases. Connections: one HASH
 * field per instance (`conns`), each with its expiry. Actions: Redis pub/sub, one channel per
 * instance for the actions relayed to it (`act:<instance>`) and one per bus for the answers
 * (`ans:<random id>`), on one subscriber connection opened when first needed (ioredis
 * subscribes again after a reconnection). A relay is fire-and-wait: a request no instance
 * listens to resolves `unheard`, one whose answer never comes `undefined`, and the caller says why.
 */
export class RedisBus implements InstanceBus {
  private readonly me = nanoid(12);
  private subscriber: ScriptedRedis | undefined;
  private readonly subscribed = new Map<string, Promise<unknown>>();
  private readonly serving = new Map<string, (action: RelayedAction) => Promise<RelayAnswer>>();
  private readonly waiting = new Map<string, (answer: RelayAnswer | undefined) => void>();
  private relays = 0;

  constructor(
    private readonly url: string,
    private readonly prefix: string,
    private readonly commands: ScriptedRedis,
    private readonly logger?: ConnectionLogger,
  ) {}

  async holdLease(name: string, holder: string, ttlMs: number, now: number): Promise<number | undefined> {
    const fence = await this.commands.aiHoldLease(this.prefix, name, holder, Math.floor(ttlMs), clock(now));
    return typeof fence === 'number' ? fence : undefined;
  }

  async dropLease(name: string, holder: string): Promise<void> {
    await this.commands.aiHoldLease(this.prefix, name, holder, 0, '', 'drop');
  }

  async fenceHolds(name: string, fence: number): Promise<boolean> {
    return (await this.commands.aiFenced(this.prefix, name, fence)) === 1;
  }

  async fencedPut(name: string, fence: number, key: string, value: string, ttlMs: number): Promise<boolean> {
    return (await this.commands.aiFenced(this.prefix, name, fence, key, value, Math.max(1, Math.floor(ttlMs)))) === 1;
  }

  /** A shared value: a key with a TTL (Redis's clock ends it, close enough for a token refreshed minutes early). */
  async sharedGet(name: string): Promise<string | undefined> {
    return (await this.commands.get(`${this.prefix}val:${name}`)) ?? undefined;
  }

  async sharedPut(name: string, value: string, ttlMs: number): Promise<void> {
    await this.commands.set(`${this.prefix}val:${name}`, value, 'PX', Math.max(1, Math.floor(ttlMs)));
  }

  async shareConnections(
    instance: string,
    views: readonly ConnectionView[],
    ttlMs: number,
    now: number,
  ): Promise<void> {
    const shared: Shared = { until: now + ttlMs, views: [...views] };
    await this.commands.hset(`${this.prefix}conns`, instance, JSON.stringify(shared));
  }

  async sharedConnections(now: number): Promise<ConnectionView[]> {
    const all = await this.commands.hgetall(`${this.prefix}conns`);
    const views: ConnectionView[] = [];
    const forgotten: string[] = [];
    for (const [instance, text] of Object.entries(all)) {
      let shared: Shared;
      try {
        shared = JSON.parse(text) as Shared;
      } catch {
        forgotten.push(instance);
        continue;
      }
      if (shared.until > now) views.push(...shared.views);
      else if (shared.until < now - FORGET_AFTER_MS) forgotten.push(instance);
    }
    if (forgotten.length > 0) await this.commands.hdel(`${this.prefix}conns`, ...forgotten);
    return views;
  }

  /** Counters: one HASH field per instance (`counters`), each with its expiry, as connections. */
  async shareCounters(counters: InstanceCounters, ttlMs: number, now: number): Promise<void> {
    await this.commands.hset(
      `${this.prefix}counters`,
      counters.instance,
      JSON.stringify({ ...counters, until: now + ttlMs }),
    );
  }

  async sharedCounters(now: number): Promise<InstanceCounters[]> {
    const all = await this.commands.hgetall(`${this.prefix}counters`);
    const found: InstanceCounters[] = [];
    const forgotten: string[] = [];
    for (const [instance, text] of Object.entries(all)) {
      try {
        const { until, ...counters } = JSON.parse(text) as InstanceCounters & { until: number };
        if (until < now - FORGET_AFTER_MS) forgotten.push(instance);
        else found.push({ ...counters, live: until > now });
      } catch {
        forgotten.push(instance);
      }
    }
    if (forgotten.length > 0) await this.commands.hdel(`${this.prefix}counters`, ...forgotten);
    return found;
  }

  async serveActions(instance: string, serve: (action: RelayedAction) => Promise<RelayAnswer>): Promise<() => void> {
    const channel = `${this.prefix}act:${instance}`;
    this.serving.set(channel, serve);
    await this.subscribe(channel);
    return () => {
      this.serving.delete(channel);
      void this.subscriber?.unsubscribe(channel).catch(() => undefined);
      this.subscribed.delete(channel);
    };
  }

  async relayAction(
    instance: string,
    action: RelayedAction,
    timeoutMs: number,
  ): Promise<RelayAnswer | 'unheard' | undefined> {
    await this.subscribe(`${this.prefix}ans:${this.me}`);
    const id = `${++this.relays}`;
    let timer: NodeJS.Timeout | undefined;
    const answered = new Promise<RelayAnswer | undefined>((resolve) => {
      this.waiting.set(id, resolve);
      timer = setTimeout(() => resolve(undefined), timeoutMs);
    });
    try {
      const request: Request = { id, replyTo: this.me, action };
      const listeners = await this.commands.publish(`${this.prefix}act:${instance}`, JSON.stringify(request));
      // PUBLISH answers how many subscribers received it: none, and that instance is gone. On a
      // Cluster it counts only the node it was sent to (the message reaches every node): no sign.
      if (listeners === 0 && !isClusterUrl(this.url)) return 'unheard';
      return await answered;
    } finally {
      clearTimeout(timer);
      this.waiting.delete(id);
    }
  }

  private subscribe(channel: string): Promise<unknown> {
    let done = this.subscribed.get(channel);
    if (!done) {
      done = this.connection().subscribe(channel);
      this.subscribed.set(channel, done);
      done.catch(() => this.subscribed.delete(channel));
    }
    return done;
  }

  private connection(): ScriptedRedis {
    if (this.subscriber) return this.subscriber;
    const subscriber = connect(this.url, 'bus', blockingOptions(), this.logger);
    subscriber.on('message', (channel: string, message: string) => void this.received(channel, message));
    this.subscriber = subscriber;
    return subscriber;
  }

  private async received(channel: string, message: string): Promise<void> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(message);
    } catch {
      return; // not ours
    }
    if (channel === `${this.prefix}ans:${this.me}`) {
      const { id, answer } = parsed as { id: string; answer: RelayAnswer };
      this.waiting.get(id)?.(answer);
      return;
    }
    const serve = this.serving.get(channel);
    if (!serve) return;
    const { id, replyTo, action } = parsed as Request;
    let answer: RelayAnswer;
    try {
      answer = await serve(action);
    } catch (error) {
      answer = { ok: false, status: 500, code: 'internal', message: (error as Error).message };
    }
    await this.commands
      .publish(`${this.prefix}ans:${replyTo}`, JSON.stringify({ id, answer }))
      .catch((error: Error) => {
        this.logger?.warn({ err: error }, "Redis store: a relayed action's answer could not be sent");
      });
  }

  close(): void {
    this.subscriber?.disconnect();
    this.subscriber = undefined;
    for (const resolve of this.waiting.values()) resolve(undefined);
  }
}
