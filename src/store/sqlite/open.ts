import Database from 'better-sqlite3';
import { UnavailableError } from '../../core/errors.js';

/** How long the open waits for another owner to let go before it says the file is in use. */
const OWNER_WAIT_MS = 200;

/** An open store file and the lock that makes this instance its only owner. */
export interface OwnedFile {
  db: Database.Database;
  /** Close the file, then let go of it. */
  close(): void;
}

/**
 * Open a SQLite file for this instance alone. The store keeps indexes of its rows in memory,
 * so a second writer (another store in this process, or another process) would silently
 * diverge from them. Ownership is a lock on a companion file, `<path>.owner`: a tiny SQLite
 * file in `locking_mode=EXCLUSIVE`, whose first write holds its lock until close; a second
 * opener fails there. The store file itself stays in normal locking mode, so a checkpoint can
 * run on a connection of its own (see checkpoint.ts) and an operator can read it with
 * `sqlite3` while the service runs (never write to it: the indexes would not know).
 */
export function openOwned(path: string): OwnedFile {
  const owner = path === ':memory:' ? undefined : takeOwnership(path);
  try {
    const db = new Database(path);
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      return {
        db,
        close() {
          try {
            db.close();
          } finally {
            owner?.close();
          }
        },
      };
    } catch (error) {
      db.close();
      throw error;
    }
  } catch (error) {
    owner?.close();
    // An older release kept the store file itself locked: still another owner.
    throw inUse(error, path);
  }
}

function takeOwnership(path: string): Database.Database {
  const owner = new Database(`${path}.owner`);
  try {
    owner.pragma(`busy_timeout = ${OWNER_WAIT_MS}`);
    owner.pragma('locking_mode = EXCLUSIVE');
    owner.exec('BEGIN IMMEDIATE; CREATE TABLE IF NOT EXISTS owner (pid INTEGER); COMMIT');
    return owner;
  } catch (error) {
    owner.close();
    throw inUse(error, path);
  }
}

function inUse(error: unknown, path: string): unknown {
  if (!(error instanceof Database.SqliteError && error.code.startsWith('SQLITE_BUSY'))) return error;
  return new UnavailableError(
    'store_in_use',
    `SQLite store "${path}" is in use by another instance (another process or store has it open); one SQLite file serves one instance, use the Redis store to run several`,
    5,
    { stage: 'store', cause: error },
  );
}
