import type { Logger } from 'pino';
import type { SharedValues } from '../../core/ports/index.js';

/** What an adapter may use of the world beyond its settings: values shared by every instance (access tokens). */
export interface AdapterContext {
  readonly shared: SharedValues;
  now(): number;
  /** Warnings an adapter gives once (Discord without the message-content intent). @default none */
  readonly logger?: Logger;
}

/** A context of this process alone (tests, a hand-built adapter). */
export function localContext(now: () => number = Date.now): AdapterContext {
  const values = new Map<string, { value: string; until: number }>();
  return {
    now,
    shared: {
      async sharedGet(name, at) {
        const kept = values.get(name);
        return kept && kept.until > at ? kept.value : undefined;
      },
      async sharedPut(name, value, ttlMs, at) {
        values.set(name, { value, until: at + ttlMs });
      },
    },
  };
}

/** A token as a platform issues it. */
export interface IssuedToken {
  token: string;
  /** How long the platform says it lives, ms. */
  expiresInMs: number;
}

/** Refreshed this long before the platform's expiry (WeChat: 2 h tokens; Feishu: 2 h). */
const REFRESH_MARGIN_MS = 5 * 60_000;

/**
 * A platform API access token shared by every instance: fetched once (one request in flight per
 * instance), kept in the store until `REFRESH_MARGIN_MS` before it expires (at least half its
 * life), and fetched again by whichever instance needs it next. `invalidate` drops it after the
 * platform said it is no longer valid.
 */
export class AccessToken {
  private inFlight: Promise<string> | undefined;

  constructor(
    private readonly name: string,
    private readonly context: AdapterContext,
    private readonly issue: (signal: AbortSignal) => Promise<IssuedToken>,
  ) {}

  async get(signal: AbortSignal): Promise<string> {
    const kept = await this.context.shared.sharedGet(this.name, this.context.now());
    if (kept) return kept;
    this.inFlight ??= this.fetch(signal).finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async fetch(signal: AbortSignal): Promise<string> {
    const { token, expiresInMs } = await this.issue(signal);
    const keepMs = Math.max(expiresInMs - REFRESH_MARGIN_MS, expiresInMs / 2);
    if (keepMs > 0) await this.context.shared.sharedPut(this.name, token, keepMs, this.context.now());
    return token;
  }

  /** Forget the token (the platform refused it): the next `get` fetches a new one. */
  async invalidate(): Promise<void> {
    await this.context.shared.sharedPut(this.name, '', 1, this.context.now() - 1);
  }
}
