import { statSync } from 'node:fs';
import { UnavailableError } from '../../core/errors.js';

/** How often, at most, writes compare the file at the path with the one open (ms of `now`). */
const IDENTITY_CHECK_MS = 1000;

/**
 * Refuse to write into a file no longer at its path (deleted or replaced by a restore): the
 * writes would succeed into an orphan and vanish at restart. Checked at most once per
 * IDENTITY_CHECK_MS of the callers' clock; a check without a time (ping) always looks.
 */
export class FileIdentity {
  private readonly identity: { dev: number; ino: number } | undefined;
  private checkedAt = -Infinity;
  /** Set once the file was found gone: every later write fails the same way. */
  broken: Error | undefined;

  constructor(private readonly path: string) {
    this.identity = path === ':memory:' ? undefined : identityOf(path);
  }

  check(now: number | undefined): void {
    if (this.broken) throw this.broken;
    if (!this.identity) return;
    if (now !== undefined && Number.isFinite(now) && now >= this.checkedAt && now - this.checkedAt < IDENTITY_CHECK_MS)
      return;
    if (now !== undefined && Number.isFinite(now)) this.checkedAt = now;
    const current = identityOf(this.path);
    if (current?.dev === this.identity.dev && current.ino === this.identity.ino) return;
    this.broken = new UnavailableError(
      'store_unavailable',
      `SQLite store file "${this.path}" was deleted or replaced while the service ran; restart the service`,
      5,
      { stage: 'store' },
    );
    throw this.broken;
  }
}

function identityOf(path: string): { dev: number; ino: number } | undefined {
  try {
    const { dev, ino } = statSync(path);
    return { dev, ino };
  } catch {
    return undefined;
  }
}
