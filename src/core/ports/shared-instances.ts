import type { InstanceBus } from './bus.js';
import type { TrailLog, TrailLogOptions } from '../../events/trace.js';

/**
 * What instances sharing one store (Redis) use to reach each other and to keep one verdict
 * trail; a store of one process leaves both out, and the process keeps its own ring.
 */
export interface SharedInstances {
  /** How instances sharing this store reach each other; absent when one process is the whole deployment. */
  readonly bus?: InstanceBus;
  /** The trail every instance on this store shares (Redis); absent when one process is the whole deployment. */
  openTrail?(options: TrailLogOptions): TrailLog;
}
