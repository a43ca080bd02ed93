import { EventEmitter } from 'node:events';
import type { OutboxRecord } from '../core/ports/index.js';
import type { Output } from '../events/output.js';

/** The output with its seq in place after `id`, as on the wire. */
function withSeq(built: Omit<Output, 'seq'>, seq: number): Output {
  const { type, id, ...rest } = built;
  return { type, id, seq, ...rest } as Output;
}

/**
 * Where recorded output goes live in this process: the emitter behind
 * `intake.on('chat.processedMessage')`. Event streams do not read it: they follow the store's
 * tail (src/http/event-stream.ts), so a client sees every instance's outputs in seq order.
 * Listener errors are isolated so one bad consumer cannot stop the others or the pipeline.
 */
export class Outlet {
  readonly emitter = new EventEmitter();

  constructor(private readonly onListenerError: (error: unknown) => void) {
    this.emitter.setMaxListeners(0);
  }

  /** Hand a recorded output to every listener; `built` is the object it was serialized from. */
  publish(record: OutboxRecord, built: Omit<Output, 'seq'>): void {
    if (this.emitter.listenerCount(record.type) === 0) return;
    const output = withSeq(built, record.seq);
    for (const listener of this.emitter.listeners(record.type)) {
      try {
        const result = (listener as (output: Output) => unknown)(output);
        if (result instanceof Promise) result.catch(this.onListenerError);
      } catch (error) {
        this.onListenerError(error);
      }
    }
  }
}
