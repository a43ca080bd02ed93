import { EventEmitter } from 'node:events';
import { outputOf, type OutboxRecord, type Output } from '../events.js';

/** The output with its seq in place after `id`, as on the wire. */
function withSeq(built: Omit<Output, 'seq'>, seq: number): Output {
  const { type, id, ...rest } = built;
  return { type, id, seq, ...rest } as Output;
}

export type RecordListener = (record: OutboxRecord) => void;

/**
 * Where recorded output goes live: the in-process emitter (`intake.on('chat.processedMessage')`)
 * and every open event stream. Listener errors are isolated so one bad consumer cannot stop
 * the others or the pipeline.
 */
export class Outlet {
  readonly emitter = new EventEmitter();
  private readonly streams = new Set<RecordListener>();

  constructor(private readonly onListenerError: (error: unknown) => void) {
    this.emitter.setMaxListeners(0);
  }

  /** Hand a recorded output to every listener; `built` is the object it was serialized from. */
  publish(record: OutboxRecord, built?: Omit<Output, 'seq'>): void {
    for (const stream of this.streams) stream(record);
    if (this.emitter.listenerCount(record.type) === 0) return;
    const output = (built ? withSeq(built, record.seq) : outputOf(record));
    for (const listener of this.emitter.listeners(record.type)) {
      try {
        const result = (listener as (output: Output) => unknown)(output);
        if (result instanceof Promise) result.catch(this.onListenerError);
      } catch (error) {
        this.onListenerError(error);
      }
    }
  }

  /** Receive every record published from now on; returns the unsubscribe function. */
  subscribe(listener: RecordListener): () => void {
    this.streams.add(listener);
    return () => this.streams.delete(listener);
  }

  get streamCount(): number {
    return this.streams.size;
  }
}
