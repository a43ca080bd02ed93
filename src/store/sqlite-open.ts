import Database from 'better-sqlite3';
import { UnavailableError } from '../errors.js';

/** How long the open waits for another owner to let go before it says the file is in use. */
const OWNER_WAIT_MS = 200;

/**
 * Open a SQLite file for this instance alone. The store keeps indexes of its rows in memory,
 * so a second writer (another store in this process, or another process) would silently
 * diverge from them. `locking_mode=EXCLUSIVE`, set before WAL is enabled, makes the first
 * write lock the file until close (and WAL then needs no shared-memory index); the immediate
 * write transaction takes that lock now, so a second opener fails here, not at its first write.
 */
export function openExclusive(path: string): Database.Database {
  const db = new Database(path);
  try {
    db.pragma(`busy_timeout = ${OWNER_WAIT_MS}`);
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec('BEGIN IMMEDIATE; COMMIT');
    return db;
  } catch (error) {
    db.close();
    if (error instanceof Database.SqliteError && error.code.startsWith('SQLITE_BUSY')) {
      throw new UnavailableError(
        'store_in_use',
        `SQLite store "${path}" is in use by another instance (another process or store has it open); one SQLite file serves one instance, use the Redis store to run several`,
        5, { stage: 'store', cause: error },
      );
    }
    throw error;
  }
}
