import type { Clock } from '../core/clock.js';
import type { ForwardsOptions } from '../config/schema.js';
import type { BufferedPart } from '../events/inbound.js';
import type { ForwardedMessage, ForwardFailure, ForwardNode } from '../events/reply.js';

export interface ForwardReaderOptions {
  clock: Clock;
  /**
   * The nodes of a merged forward: through the platform's API where the adapter reads it itself
   * (Feishu), else through the bot that delivered it (`get_forward_msg`, as `POST
   * /v1/channels/<id>/actions/...` sends it).
   */
  read(channel: string, botId: string | undefined, id: string): Promise<ForwardNode[]>;
  /** A channel's `forwards` settings (its own over the global ones). */
  limitsOf(channel: string): ForwardsOptions;
  /**
   * How long a read forward waits for its batch's flush to collect it (the flush may run on
   * another instance and read it again). @default 5 minutes
   */
  keepSettledMs?: number;
  /**
   * Reads kept for a flush at most, the oldest let go first (its flush, if it comes here, reads
   * it again). Batches kept as context or flushed on another instance never collect theirs, and
   * any group member can send forwards. @default 1000
   */
  maxKept?: number;
}

/** What was read of one part's merged forward. */
export interface PartForwards {
  forwarded: ForwardedMessage[];
  errors: ForwardFailure[];
}

const KEEP_SETTLED_MS = 5 * 60_000;
const MAX_KEPT = 1000;

/**
 * Merged forwards (a part whose `fields.forward_id` names one) read while the debounce window
 * is open: begun at admission, like downloads, and collected at flush. Each read has one
 * deadline (`forwards.timeoutMs`) from its start, nested reads included; what is read by then
 * is kept and the rest becomes a `forwardErrors` entry, so a bot that never answers delays its
 * output by that much at most. Bounded by `maxNodes`, `maxDepth` and `maxChars`.
 */
export class ForwardReader {
  private readonly pending = new Map<string, Promise<PartForwards>>();

  constructor(private readonly options: ForwardReaderOptions) {}

  /** Begin reading a recorded part's merged forward. */
  begin(part: BufferedPart): void {
    void this.reading(part);
  }

  /** What each part's merged forward holds (undefined: the part names none), starting any read not yet begun. */
  async collect(parts: readonly BufferedPart[]): Promise<Array<PartForwards | undefined>> {
    // The reads themselves, not looked up after: a batch's own reads may let go of one another (maxKept).
    const results = await Promise.all(parts.map((part) => this.reading(part)));
    for (const part of parts) this.pending.delete(part.id);
    return results;
  }

  /** A part's read, begun now unless it was; undefined when the part names no merged forward. */
  private reading(part: BufferedPart): Promise<PartForwards> | undefined {
    if (part.event.fields?.forward_id === undefined) return undefined;
    const begun = this.pending.get(part.id);
    if (begun) return begun;
    const reading = this.readPart(part);
    this.pending.set(part.id, reading);
    // A Map iterates in insertion order: its first key is the oldest read.
    if (this.pending.size > (this.options.maxKept ?? MAX_KEPT)) this.pending.delete(this.pending.keys().next().value!);
    const forget = () =>
      this.options.clock.setTimeout(() => {
        if (this.pending.get(part.id) === reading) this.pending.delete(part.id);
      }, this.options.keepSettledMs ?? KEEP_SETTLED_MS);
    void reading.then(forget);
    return reading;
  }

  private readPart(part: BufferedPart): Promise<PartForwards> {
    const { event } = part;
    const id = event.fields?.forward_id as string;
    const limits = this.options.limitsOf(event.channel);
    const out: PartForwards = { forwarded: [], errors: [] };
    let chars = 0;
    let done = false;
    const read = (of: string) => this.options.read(event.channel, event.botId, of);

    const walk = async (nodes: readonly ForwardNode[], depth: number, of: string): Promise<void> => {
      for (const node of nodes) {
        if (done) return;
        if (out.forwarded.length >= limits.maxNodes) {
          out.errors.push({ id: of, reason: `too_large: more than ${limits.maxNodes} messages (forwards.maxNodes)` });
          done = true;
          return;
        }
        const tooLarge = () => {
          if (!done)
            out.errors.push({
              id: of,
              reason: `too_large: more than ${limits.maxChars} characters (forwards.maxChars)`,
            });
          done = true;
        };
        // The sender's name and the media references are text of the output too: a bot may
        // relay a name or a list of images of any length, so they count toward maxChars.
        chars += node.sender.name?.length ?? 0;
        if (chars > limits.maxChars) return tooLarge();
        let content = node.content;
        if (chars + content.length > limits.maxChars) {
          content = content.slice(0, limits.maxChars - chars);
          tooLarge();
        }
        chars += content.length;
        const media: ForwardedMessage['media'] = [];
        for (const item of node.media) {
          if (done || chars + item.ref.length > limits.maxChars) {
            tooLarge();
            break;
          }
          chars += item.ref.length;
          media.push(item);
        }
        out.forwarded.push({ sender: node.sender, content, timestamp: node.timestamp, media });
        const nested = node.nested;
        if (done || !nested) continue;
        const nestedId = nested.id ?? of;
        if (depth >= limits.maxDepth) {
          out.errors.push({ id: nestedId, reason: `too_deep: nested past ${limits.maxDepth} (forwards.maxDepth)` });
          continue;
        }
        try {
          await walk(nested.nodes ?? (nested.id ? await read(nested.id) : []), depth + 1, nestedId);
        } catch (error) {
          if (!done) out.errors.push({ id: nestedId, reason: reasonOf(error) });
        }
      }
    };

    const whole = (async () => {
      try {
        await walk(await read(id), 1, id);
      } catch (error) {
        if (!done) out.errors.push({ id, reason: reasonOf(error) });
      }
    })();
    return new Promise<PartForwards>((resolve) => {
      const timer = this.options.clock.setTimeout(() => {
        if (done) return;
        done = true;
        out.errors.push({ id, reason: `timeout: not read within ${limits.timeoutMs} ms (forwards.timeoutMs)` });
        resolve(settled(out));
      }, limits.timeoutMs);
      void whole.then(() => {
        this.options.clock.clearTimeout(timer);
        done = true;
        resolve(settled(out));
      });
    });
  }
}

/** A copy taken when the read settles: a walk still running past its deadline adds nothing to it. */
function settled(out: PartForwards): PartForwards {
  return { forwarded: [...out.forwarded], errors: [...out.errors] };
}

function reasonOf(error: unknown): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : String(error);
  return (typeof code === 'string' ? `${code}: ${text}` : text).slice(0, 500);
}
