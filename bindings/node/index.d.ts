/** Loads sqlite-embed into a better-sqlite3 Database or a node:sqlite DatabaseSync. */
export function load(db: { loadExtension(path: string): unknown }): void;
/** The path of embed.so. */
export function getLoadablePath(): string;
/** The path of embed_preload.so (LD_PRELOAD helper for hosts that cannot load extensions). */
export function getPreloadPath(): string;
/** The sqlite-embed version (the repository's VERSION file). */
export const version: string;
