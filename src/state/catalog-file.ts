// catalog.json, shared by every bridge of a state dir (one per VS Code window, command-line
// runs, the extension's Refresh Tools). Each writer keeps its own section, keyed by host and
// pid, and rewrites only that one under a lock, so one window never erases another's servers.
// Readers merge: a window's Tools view takes server states from its own live bridge and tool
// lists from whichever section listed them last; a bridge's cache takes tool lists from any
// section listed under the same server configuration.
import { hostname } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { ensurePrivateDirAsync, readPrivateFile, writePrivateFile } from './private-files.ts';
import { processAlive } from '../shared/process-alive.ts';
import { withLock } from './lock.ts';

export const CATALOG_FILE = 'catalog.json';
const CATALOG_LOCK = 'catalog.lock';
/** Set by the VS Code extension on the bridge it defines: which window the bridge serves. */
export const OWNER_ENV = 'CODE_EXECUTION_MODE_OWNER';

const serverStates = ['not-started', 'starting', 'running', 'error', 'disabled'] as const;
export type ServerState = (typeof serverStates)[number];

/** Icons kept of one tool, and the longest `src` (a data: URI of a small icon fits). */
export const MAX_TOOL_ICONS = 8;
export const MAX_TOOL_ICON_SRC_CHARS = 16 * 1024;

const toolIconSchema = z.object({
  src: z.string().min(1).max(MAX_TOOL_ICON_SRC_CHARS),
  mimeType: z.string().max(100).optional(),
  sizes: z.array(z.string().max(20)).max(16).optional(),
  theme: z.enum(['light', 'dark']).optional(),
});
export type ToolIcon = z.infer<typeof toolIconSchema>;

/** The most characters a tool's own `_meta` may take as JSON; a bigger one is dropped, not the tool. */
export const MAX_TOOL_META_CHARS = 8 * 1024;

const toolMetaSchema = z
  .record(z.string(), z.unknown())
  .refine((meta) => JSON.stringify(meta).length <= MAX_TOOL_META_CHARS, 'too big')
  .optional()
  .catch(undefined);

export const listedToolSchema = z.object({
  name: z.string().min(1).max(256),
  // A bad title is dropped, not the tool.
  title: z.string().max(1000).optional().catch(undefined),
  description: z.string().max(20_000).optional(),
  inputSchema: z.unknown().optional(),
  // What a call returns (its structured content): shown as the docs' Returns line.
  outputSchema: z.unknown().optional(),
  annotations: z.unknown().optional(),
  // Shown by the docs, never fetched by the bridge; a bad or oversized list is dropped, not the tool.
  icons: z.array(toolIconSchema).max(MAX_TOOL_ICONS).optional().catch(undefined),
  // The server's own metadata of the tool: shown by the full docs as data.
  _meta: toolMetaSchema,
});

// Loose objects: a field this version does not know survives another writer's rewrite.
const serverEntrySchema = z.looseObject({
  tools: z.array(listedToolSchema).max(10_000).optional(),
  updatedAt: z.string().optional(),
  fingerprint: z.string().optional(),
  /** The server's state when written (for the extension's views); not used on load. */
  state: z.enum(serverStates).optional(),
  error: z.string().max(4000).optional(),
  /** What of the server's tool list was left out (a cap), and why. */
  warning: z.string().max(4000).optional(),
  description: z.string().optional(),
});
export type CatalogServerEntry = z.infer<typeof serverEntrySchema>;

const sectionSchema = z.looseObject({
  /** "bridge": serves runs; "refresh": the extension listing tools for its views. */
  role: z.enum(['bridge', 'refresh']),
  /** The VS Code window (extension activation) this writer belongs to, if any. */
  owner: z.string().max(200).optional(),
  pid: z.number().int().positive(),
  host: z.string().max(300),
  /** When the writer started: of two live bridges of a window, the newer one is the window's (older writers lack it). */
  startedAt: z.string().max(40).optional(),
  updatedAt: z.string(),
  servers: z.record(z.string(), serverEntrySchema),
});
export type CatalogSection = z.infer<typeof sectionSchema>;

const fileSchema = z.object({ version: z.literal(2), writers: z.record(z.string(), sectionSchema) });
/** What versions before the split wrote: one writer's servers. */
const legacySchema = z.object({ version: z.literal(1), servers: z.record(z.string(), serverEntrySchema) });

/** The per-server view readers get (the shape catalog.json had before writers were split). */
export type CatalogServers = Record<string, CatalogServerEntry>;

export interface CatalogWriter {
  role: 'bridge' | 'refresh';
  owner?: string;
}

const HOST = hostname();
const STARTED_AT = new Date().toISOString();
let writer: CatalogWriter = { role: 'bridge', ...(process.env[OWNER_ENV] ? { owner: process.env[OWNER_ENV] } : {}) };

/** Who this process writes catalog.json as (the extension: its window, role "refresh"). */
export function setCatalogWriter(identity: CatalogWriter): void {
  writer = identity;
}

/** Sections of processes gone this long are dropped; until then their tool lists serve as cache. */
const DEAD_SECTION_MS = 24 * 3600_000;
/** Sections of other hosts (a state dir on a network share) are trusted this long. */
const OTHER_HOST_MS = 7 * 24 * 3600_000;
const MAX_SECTIONS = 32;
/** A bigger catalog.json is not read (32 sections of large tool lists fit well under this). */
export const MAX_CATALOG_FILE_BYTES = 256 * 1024 * 1024;

/** The sections of a catalog file's text (the legacy format as one dead section); [] for anything else. */
export function parseCatalogFile(text: string): Array<[string, CatalogSection]> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return [];
  }
  const parsed = fileSchema.safeParse(raw);
  if (parsed.success) return Object.entries(parsed.data.writers);
  const legacy = legacySchema.safeParse(raw);
  if (legacy.success)
    return [['legacy', { role: 'bridge', pid: 1, host: '', updatedAt: '1970-01-01T00:00:00.000Z', servers: legacy.data.servers }]];
  return [];
}

export async function readCatalogSections(dir: string): Promise<Array<[string, CatalogSection]>> {
  try {
    const text = await readPrivateFile(join(dir, CATALOG_FILE), MAX_CATALOG_FILE_BYTES);
    return text === undefined ? [] : parseCatalogFile(text);
  } catch {
    return [];
  }
}

/** Whether the section's writer is still running (other hosts: trusted for a while). */
function sectionAlive(section: CatalogSection, now = Date.now()): boolean {
  if (section.host === HOST) return processAlive(section.pid);
  return section.host !== '' && now - Date.parse(section.updatedAt) < OTHER_HOST_MS;
}

/** Replaces this process's section (servers as given) under the lock; stale sections are dropped. */
export async function saveCatalogSection(dir: string, servers: CatalogServers): Promise<void> {
  await ensurePrivateDirAsync(dir);
  const key = `${writer.role}:${HOST}:${process.pid}`;
  const saved = await withLock(join(dir, CATALOG_LOCK), async () => {
    const now = Date.now();
    const kept = (await readCatalogSections(dir)).filter(
      ([id, section]) =>
        id !== key && id !== 'legacy' && (sectionAlive(section, now) || now - Date.parse(section.updatedAt) < DEAD_SECTION_MS),
    );
    kept.push([
      key,
      {
        role: writer.role,
        ...(writer.owner ? { owner: writer.owner } : {}),
        pid: process.pid,
        host: HOST,
        startedAt: STARTED_AT,
        updatedAt: new Date(now).toISOString(),
        servers,
      },
    ]);
    const newest = kept.sort(([, a], [, b]) => (a.updatedAt < b.updatedAt ? 1 : -1)).slice(0, MAX_SECTIONS);
    await writePrivateFile(join(dir, CATALOG_FILE), `${JSON.stringify({ version: 2, writers: Object.fromEntries(newest) })}\n`);
  });
  if (!saved) throw new Error(`could not lock ${join(dir, CATALOG_LOCK)}`);
}

/** The most recently listed tools of a server, of that configuration (undefined: any). */
export function cachedTools(
  sections: Array<[string, CatalogSection]>,
  name: string,
  fingerprint: string | undefined,
): CatalogServerEntry | undefined {
  let best: CatalogServerEntry | undefined;
  for (const [, section] of sections) {
    const entry = section.servers[name];
    if (!entry?.tools || (fingerprint !== undefined && entry.fingerprint && entry.fingerprint !== fingerprint)) continue;
    if (!best || (entry.updatedAt ?? '') > (best.updatedAt ?? '')) best = entry;
  }
  return best;
}

/**
 * One window's view of the servers: state, error and description from its own bridge (the
 * newest started live bridge of that owner, since a restarted bridge's predecessor may still be
 * shutting down and writing; without an owner, the newest live bridge), tools
 * from the newest listing of the same configuration in any section. A server no live bridge
 * of the window runs is "not-started" (its tools, when known, are a cache).
 */
export function mergeCatalog(
  sections: Array<[string, CatalogSection]>,
  owner?: string,
  alive: (s: CatalogSection) => boolean = (s) => sectionAlive(s),
): CatalogServers {
  const bridges = sections
    .map(([, s]) => s)
    .filter((s) => s.role === 'bridge' && (owner === undefined || s.owner === owner) && alive(s))
    .sort((a, b) => {
      const [first, second] = owner === undefined ? [a.updatedAt, b.updatedAt] : [a.startedAt ?? a.updatedAt, b.startedAt ?? b.updatedAt];
      return first !== second ? (first < second ? 1 : -1) : a.updatedAt < b.updatedAt ? 1 : -1;
    });
  const names = new Set(sections.flatMap(([, s]) => Object.keys(s.servers)));
  const merged: CatalogServers = {};
  for (const name of names) {
    const own = bridges.find((s) => s.servers[name])?.servers[name];
    const { tools: _tools, updatedAt: _updated, ...status } = own ?? { state: 'not-started' as const };
    const listed = cachedTools(sections, name, own?.fingerprint);
    merged[name] = {
      ...status,
      ...(own ? {} : listed?.description ? { description: listed.description } : {}),
      ...(listed?.tools ? { tools: listed.tools, ...(listed.updatedAt ? { updatedAt: listed.updatedAt } : {}) } : {}),
    };
  }
  return merged;
}
