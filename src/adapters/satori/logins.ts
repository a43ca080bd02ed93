import type { AdapterContext } from '../kit/access-token.js';

/** One bot account the Satori server serves: a login's platform and user id (satori.chat resources/login). */
export interface Login {
  platform: string;
  userId: string;
}

/** How long the logins a server announced are kept for actions on other instances: a day past the last change. */
const LOGINS_TTL_MS = 24 * 3_600_000;

/**
 * The logins of one Satori channel: learned from READY and `login-*` events on the instance
 * holding the event socket, and kept in the store so an action on any instance finds the
 * platform of the bot it names (`Satori-Platform` goes with `Satori-User-ID` on every call).
 */
export class Logins {
  /** user id -> platform; a user id two platforms share names the latest login. */
  private readonly byUser = new Map<string, string>();

  constructor(
    private readonly context: AdapterContext,
    private readonly key: string,
  ) {}

  /** Every login at once (READY): the accounts no longer listed are gone. */
  replace(logins: readonly Login[]): void {
    this.byUser.clear();
    for (const login of logins) this.byUser.set(login.userId, login.platform);
    this.keep();
  }

  /** A login added, or still there (`login-added`, `login-updated`); also what any event names. */
  add(login: Login): void {
    if (this.byUser.get(login.userId) === login.platform) return;
    this.byUser.set(login.userId, login.platform);
    this.keep();
  }

  remove(login: Login): void {
    if (this.byUser.get(login.userId) !== login.platform) return;
    this.byUser.delete(login.userId);
    this.keep();
  }

  /** The platform of a bot known here. */
  platformOf(userId: string): string | undefined {
    return this.byUser.get(userId);
  }

  /** The only login, when there is exactly one here. */
  only(): string | undefined {
    return this.byUser.size === 1 ? [...this.byUser.keys()][0] : undefined;
  }

  ids(): string[] {
    return [...this.byUser.keys()];
  }

  /** The platform of a bot, from this instance or else the store (another instance holds the socket). */
  async resolve(userId: string | undefined): Promise<{ userId: string; platform: string } | undefined> {
    if (userId === undefined) {
      const only = this.only() ?? (await this.load()).only();
      return only === undefined ? undefined : this.resolve(only);
    }
    const platform = this.platformOf(userId) ?? (await this.load()).platformOf(userId);
    return platform === undefined ? undefined : { userId, platform };
  }

  /** Those the store keeps, merged into what this instance knows. */
  private async load(): Promise<this> {
    const kept = await this.context.shared.sharedGet(this.key, this.context.now()).catch(() => undefined);
    if (!kept) return this;
    try {
      const pairs = JSON.parse(kept) as unknown;
      if (Array.isArray(pairs))
        for (const pair of pairs)
          if (Array.isArray(pair) && typeof pair[0] === 'string' && typeof pair[1] === 'string')
            if (!this.byUser.has(pair[0])) this.byUser.set(pair[0], pair[1]);
    } catch {
      // Not ours: nothing known from it.
    }
    return this;
  }

  private keep(): void {
    const value = JSON.stringify([...this.byUser.entries()]);
    void this.context.shared.sharedPut(this.key, value, LOGINS_TTL_MS, this.context.now()).catch(() => undefined);
  }
}
