import compose from 'koa-compose';
import { IntakeError } from '../core/errors.js';
import type { InboundEvent } from '../events/inbound.js';

/**
 * A step of the inbound chain (`intake.use`): it sees each normalized event before dedup and
 * buffering, and may change it in place (enrich, tag) or drop it by returning without calling
 * `next()`. A step that throws refuses the whole delivery with a 500: nothing is recorded and
 * the platform retries.
 */
export type InboundMiddleware = (event: InboundEvent, next: () => Promise<void>) => unknown;

/** The user's inbound chain, composed with koa-compose in `use` order. */
export class InboundChain {
  private readonly steps: InboundMiddleware[] = [];
  private composed: compose.ComposedMiddleware<InboundEvent> | undefined;

  /** Add a step at the end of the chain. */
  use(middleware: InboundMiddleware): void {
    if (typeof middleware !== 'function') throw new TypeError('intake.use() takes a function (event, next) => ...');
    this.steps.push(middleware);
    this.composed = compose([...this.steps]);
  }

  /** Run the chain over each event; the events it dropped (none without a chain: undefined at once, no promise). */
  screen(channelId: string, events: readonly InboundEvent[]): Promise<Set<InboundEvent>> | undefined {
    const chain = this.composed;
    return chain && this.run(chain, channelId, events);
  }

  private async run(
    chain: compose.ComposedMiddleware<InboundEvent>,
    channelId: string,
    events: readonly InboundEvent[],
  ): Promise<Set<InboundEvent>> {
    const dropped = new Set<InboundEvent>();
    for (const event of events) {
      let passed = false;
      try {
        await chain(event, async () => {
          passed = true;
        });
      } catch (error) {
        throw new IntakeError(
          'middleware_failed',
          500,
          `An inbound middleware (intake.use) failed on channel "${channelId}": ${(error as Error).message}; nothing was recorded`,
          { channel: channelId, stage: 'middleware', cause: error },
        );
      }
      if (!passed) dropped.add(event);
    }
    return dropped;
  }
}
