// The tool catalog over every enabled proxied server: what each server offers, under which
// Python names, and its state. Cached on disk in the state dir so that a search does not have
// to start every server; refreshed whenever a server lists its tools.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { pythonName, uniqueAliases } from './aliases.ts';
import { ToolIndex } from './search.ts';
import { paramsOf, signatureOf, type ParamDoc } from './signature.ts';

export type ServerState = (typeof serverStates)[number];

export interface ToolEntry {
  server: string;
  serverAlias: string;
  serverDescription?: string;
  tool: string;
  alias: string;
  description: string;
  inputSchema: unknown;
  params: ParamDoc[];
  signature: string;
}

/** A tool as a server lists it; only the parts the catalog keeps. */
export interface ListedTool {
  name: string;
  description?: string;
  inputSchema?: unknown;
}

const listedToolSchema = z.object({
  name: z.string().min(1).max(256),
  description: z.string().max(20_000).optional(),
  inputSchema: z.unknown().optional(),
});

const serverStates = ['not-started', 'starting', 'running', 'error', 'disabled'] as const;

export const cacheSchema = z.object({
  version: z.literal(1),
  servers: z.record(
    z.string(),
    z.object({
      tools: z.array(listedToolSchema).max(10_000).optional(),
      updatedAt: z.string().optional(),
      fingerprint: z.string().optional(),
      /** The server's state when written (for the extension's views); not used on load. */
      state: z.enum(serverStates).optional(),
      error: z.string().max(4000).optional(),
      description: z.string().optional(),
    }),
  ),
});
export type CatalogFile = z.infer<typeof cacheSchema>;

export interface ServerRecord {
  name: string;
  alias: string;
  description?: string;
  state: ServerState;
  error?: string;
  /** undefined while never listed (nor cached). */
  tools?: ToolEntry[];
  updatedAt?: string;
  /** Identifies the config the cached tools came from; a config change drops the cache. */
  fingerprint: string;
}

export const CATALOG_FILE = 'catalog.json';
export const MAX_TOOLS_PER_SERVER = 10_000;

export class ToolCatalog {
  private readonly servers = new Map<string, ServerRecord>();
  private index: ToolIndex | undefined;
  private readonly stateDir: string | undefined;
  private saveQueue: Promise<void> = Promise.resolve();
  private saveScheduled = false;
  private readonly listeners = new Set<() => void>();

  constructor(servers: ReadonlyArray<{ name: string; description?: string; fingerprint: string }>, stateDir?: string) {
    this.stateDir = stateDir;
    const aliases = uniqueAliases(servers.map((s) => s.name));
    servers.forEach((s, i) => {
      this.servers.set(s.name, {
        name: s.name,
        alias: aliases[i]!,
        ...(s.description ? { description: s.description } : {}),
        state: 'not-started',
        fingerprint: s.fingerprint,
      });
    });
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Reads cached tool lists; entries of unknown servers or another config are ignored. */
  async load(): Promise<void> {
    if (!this.stateDir) return;
    let raw: unknown;
    try {
      raw = JSON.parse(await readFile(join(this.stateDir, CATALOG_FILE), 'utf8'));
    } catch {
      return;
    }
    const parsed = cacheSchema.safeParse(raw);
    if (!parsed.success) return;
    for (const [name, cached] of Object.entries(parsed.data.servers)) {
      const record = this.servers.get(name);
      if (!record || record.tools || !cached.tools || (cached.fingerprint && cached.fingerprint !== record.fingerprint)) continue;
      record.tools = this.entriesFor(record, cached.tools);
      if (cached.updatedAt) record.updatedAt = cached.updatedAt;
    }
    this.index = undefined;
  }

  names(): string[] {
    return [...this.servers.keys()];
  }

  get(server: string): ServerRecord | undefined {
    return this.servers.get(server);
  }

  records(): ServerRecord[] {
    return [...this.servers.values()];
  }

  setState(server: string, state: ServerState, error?: string): void {
    const record = this.servers.get(server);
    if (!record) return;
    record.state = state;
    if (error === undefined) delete record.error;
    else record.error = error;
    this.changed(true);
  }

  /** Records a fresh tool list (untrusted: validated and capped). */
  setTools(server: string, tools: readonly unknown[]): ToolEntry[] {
    const record = this.servers.get(server);
    if (!record) return [];
    const valid = tools
      .slice(0, MAX_TOOLS_PER_SERVER)
      .map((t) => listedToolSchema.safeParse(t))
      .flatMap((r) => (r.success ? [r.data] : []));
    record.tools = this.entriesFor(record, valid);
    record.updatedAt = new Date().toISOString();
    this.index = undefined;
    this.changed(true);
    return record.tools;
  }

  /** Every tool of every server that has a known list. */
  allTools(): ToolEntry[] {
    return this.records().flatMap((r) => r.tools ?? []);
  }

  search(query: string, limit: number): ToolEntry[] {
    this.index ??= new ToolIndex(this.allTools());
    return this.index.search(query, limit);
  }

  /** Finds a tool by its real name or its alias. */
  findTool(server: string, name: string): ToolEntry | undefined {
    const tools = this.servers.get(server)?.tools ?? [];
    return tools.find((t) => t.tool === name) ?? tools.find((t) => t.alias === name);
  }

  /** Finds a server by its name or alias. */
  findServer(name: string): ServerRecord | undefined {
    return this.servers.get(name) ?? this.records().find((r) => r.alias === name || r.alias === pythonName(name));
  }

  /** Waits for pending writes of the cache file. */
  async flush(): Promise<void> {
    await this.saveQueue;
  }

  private entriesFor(record: ServerRecord, tools: readonly ListedTool[]): ToolEntry[] {
    const aliases = uniqueAliases(tools.map((t) => t.name));
    return tools.map((tool, i) => {
      const params = paramsOf(tool.inputSchema);
      return {
        server: record.name,
        serverAlias: record.alias,
        ...(record.description ? { serverDescription: record.description } : {}),
        tool: tool.name,
        alias: aliases[i]!,
        description: tool.description ?? '',
        inputSchema: tool.inputSchema ?? { type: 'object' },
        params,
        signature: signatureOf(aliases[i]!, params),
      };
    });
  }

  private changed(persist: boolean): void {
    if (persist && this.stateDir && !this.saveScheduled) {
      // Coalesce bursts (every server starting at once) into one write.
      this.saveScheduled = true;
      const dir = this.stateDir;
      this.saveQueue = this.saveQueue
        .then(() => new Promise((resolve) => setTimeout(resolve, 50)))
        .then(() => {
          this.saveScheduled = false;
          return this.save(dir);
        })
        .catch(() => undefined);
    }
    for (const listener of this.listeners) listener();
  }

  private async save(dir: string): Promise<void> {
    const servers: CatalogFile['servers'] = {};
    for (const record of this.servers.values()) {
      servers[record.name] = {
        fingerprint: record.fingerprint,
        state: record.state,
        ...(record.error ? { error: record.error } : {}),
        ...(record.description ? { description: record.description } : {}),
        ...(record.tools && record.updatedAt
          ? {
              updatedAt: record.updatedAt,
              tools: record.tools.map((t) => ({ name: t.tool, description: t.description, inputSchema: t.inputSchema })),
            }
          : {}),
      };
    }
    await mkdir(dir, { recursive: true });
    const file = join(dir, CATALOG_FILE);
    const temp = `${file}.${process.pid}.tmp`;
    await writeFile(temp, `${JSON.stringify({ version: 1, servers })}\n`);
    await rename(temp, file);
  }
}
