import type { InboundEvent } from '../events/inbound.js';

export type Handler = (event: InboundEvent) => unknown;

interface Registration {
  routes: ReadonlySet<string>;
  /** Registered with a leading `!`: sees every delivery, duplicates included. */
  everyDelivery: boolean;
  fn: Handler;
  /** Event objects this handler already ran for: one object never runs one handler twice. */
  seen: WeakSet<object>;
}

/** The routes an event matches: `message`, `message.group`, `notice.group_increase`, ... */
export function routesOf(event: InboundEvent): string[] {
  const routes = [event.kind, `${event.kind}.${event.conversation.type}`];
  if (event.detail && event.detail !== event.conversation.type) routes.push(`${event.kind}.${event.detail}`);
  return routes;
}

/**
 * Handler routes of the library (docs/library.md). `handle('message', fn)` runs once per
 * logical message; `handle('!message', fn)` for every delivery; an array with any `!` route
 * bypasses as a whole. Handlers run after the delivery is recorded, never delaying its answer.
 */
export class Handlers {
  private readonly registrations: Registration[] = [];

  constructor(private readonly onError: (error: unknown, event: InboundEvent) => void) {}

  handle(route: string | readonly string[], fn: Handler): void {
    const list = typeof route === 'string' ? [route] : route;
    if (list.length === 0) throw new TypeError('handle() needs at least one route');
    const everyDelivery = list.some((r) => r.startsWith('!'));
    this.registrations.push({
      routes: new Set(list.map((r) => r.replace(/^!/, ''))),
      everyDelivery,
      fn,
      seen: new WeakSet(),
    });
  }

  /** Run every matching handler for a delivery; `duplicate` deliveries reach `!` routes only. */
  dispatch(event: InboundEvent, duplicate: boolean): void {
    if (this.registrations.length === 0) return;
    const routes = routesOf(event);
    for (const registration of this.registrations) {
      if (duplicate && !registration.everyDelivery) continue;
      if (!routes.some((route) => registration.routes.has(route))) continue;
      if (registration.seen.has(event)) continue;
      registration.seen.add(event);
      try {
        const result = registration.fn(event);
        if (result instanceof Promise) result.catch((error: unknown) => this.onError(error, event));
      } catch (error) {
        this.onError(error, event);
      }
    }
  }
}
