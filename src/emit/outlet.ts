import { EventEmitter } from 'node:events';
import type { OutboxRecord } from '../core/ports/index.js';
import type { Output } from '../events/output.js';

/** The output with its seq in place after `id`, as on the wire. */
function withSeq(built: Omit<Output, 'seq'>, seq: number): Output {
  const { type, id, ...rest } = built;
  return { type, id, seq, ...rest } as Output;
}

/**
 * Where recorded output goes live: the in-process emitter (`intake.on('chat.processedMessage')`)
 * and every open event stream. Listener errors are isolated so one bad consumer cannot stop
 * the others or the pipeline.
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
