/**
 * Picks the memory back end: PostgreSQL when a `postgres://` URL is configured (shared by every
 * worker), else the embedded SQLite file (one machine).
 */
import type { MemoryBackend } from './memory-model.js';
import { MemoryStore } from './memory-store.js';
import { PostgresMemoryStore } from './memory-store-postgres.js';

/** Opens the store at `url` (PostgreSQL) if given, else the SQLite file at `file`. */
export async function openMemoryStore(target: { url?: string | undefined; file: string }): Promise<MemoryBackend> {
  if (target.url) return PostgresMemoryStore.open(target.url);
  return MemoryStore.open(target.file);
}
