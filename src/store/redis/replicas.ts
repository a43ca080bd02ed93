import { counted } from '../../core/errors.js';
import type { ScriptedRedis } from './connections.js';

/**
 * `waitReplicas`: a write resolves once that many replicas hold it. One WAIT per connection per
 * tick covers every write sent on it before, so concurrent admits share one round trip.
 */
export class ReplicaWaits {
  private readonly waits = new Map<ScriptedRedis, Promise<void>>();

  constructor(
    private readonly count: number,
    private readonly commandTimeoutMs: number,
  ) {}

  /** Resolve once `count` replicas hold every write sent on `client` so far. */
  held(client: ScriptedRedis): Promise<void> {
    if (this.count <= 0) return Promise.resolve();
    let wait = this.waits.get(client);
    if (!wait) {
      wait = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
        this.waits.delete(client);
        // WAIT answers within its own timeout; leave the command timeout room to carry the answer.
        const waitMs = Math.max(1, Math.floor(this.commandTimeoutMs / 2));
        const acked = await client.wait(this.count, waitMs);
        if (acked < this.count)
          throw new Error(`only ${acked} of ${counted(this.count, 'replica')} acknowledged within ${waitMs} ms`);
      });
      this.waits.set(client, wait);
    }
    return wait;
  }
}
