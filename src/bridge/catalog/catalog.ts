// The tool catalog over every enabled proxied server: what each server offers, under which
// Python names, and its state. Cached on disk in the state dir so that a search does not have
// to start every server; refreshed whenever a server lists its tools.
import type { z } from 'zod';
import { redactUrlSecrets } from '../../config/url-secrets.ts';
import { pythonName, uniqueAliases } from './aliases.ts';
import {
  CATALOG_FILE,
  cachedTools,
  listedToolSchema,
  readCatalogSections,
  saveCatalogSection,
  type CatalogServers,
  type ServerState,
  type ToolIcon,
} from '../../state/catalog-file.ts';
import { readLearnedReturns, saveLearnedReturns, toolSchemaHash, type LearnedReturn } from '../../state/learned-returns-file.ts';
import { ToolIndex, type ToolHit } from './search.ts';
import { paramsOf, returnsOf, returnTypeOf, signatureOf, type ParamDoc, type ResultsSeen } from './signature.ts';
import { lines } from '../../shared/shown-text.ts';

export { CATALOG_FILE, type ServerState } from '../../state/catalog-file.ts';

export interface ToolEntry {
  server: string;
  serverAlias: string;
  serverDescription?: string;
  tool: string;
  alias: string;
  title?: string;
  description: string;
  inputSchema: unknown;
  outputSchema?: unknown;
  annotations?: unknown;
  icons?: ToolIcon[];
  /** The tool's own `_meta` as its server listed it (capped): data for the full docs, never instructions. */
  _meta?: Record<string, unknown>;
  params: ParamDoc[];
  /** What a call returns, as a Python type from the outputSchema; absent: the tool's content. */
  returns?: string;
  /** How its calls so far returned (without an outputSchema): one text item each time, or other content. */
  seen?: ResultsSeen;
  /** The Python type a call returns, as the signature ends (signature.ts returnTypeOf). */
  returnType: string;
  signature: string;
  /** The tool runs as an MCP task (execution.taskSupport), said by this bridge's own listing of it, never by the cache. */
  taskSupport?: TaskSupport;
}

export type TaskSupport = 'required' | 'optional';

/** A tool as a server lists it; only the parts the catalog keeps. */
export type ListedTool = z.infer<typeof listedToolSchema>;

/** The tools of a listing that run as tasks (the listing is the server's: anything else is ignored). */
export function taskSupportOf(tools: readonly unknown[]): Map<string, TaskSupport> {
  const found = new Map<string, TaskSupport>();
  for (const tool of tools) {
    if (!tool || typeof tool !== 'object') continue;
    const { name, execution } = tool as { name?: unknown; execution?: unknown };
    const support = execution && typeof execution === 'object' ? (execution as { taskSupport?: unknown }).taskSupport : undefined;
    if (typeof name === 'string' && (support === 'required' || support === 'optional')) found.set(name, support);
  }
  return found;
}

export interface ServerRecord {
  name: string;
  alias: string;
  description?: string;
  state: ServerState;
  /** Why it failed, in our words: what sandboxed code is told. */
  error?: string;
  /** Why it failed in full (its stderr, redacted): for the log and the Tools view only. */
  detail?: string;
  /** What of its tool list was left out (a cap), in our words. */
  warning?: string;
  /** The server's own `instructions` from its initialize answer: untrusted, cleaned and capped. */
  instructions?: string;
  /** undefined while never listed (nor cached). */
  tools?: ToolEntry[];
  updatedAt?: string;
  /** Identifies the config the cached tools came from; a config change drops the cache. */
  fingerprint: string;
}

export const MAX_TOOLS_PER_SERVER = 10_000;
/** Characters of a server's own instructions kept (they reach the model through help() and discovery). */
export const MAX_SERVER_INSTRUCTIONS_CHARS = 2000;
/** A write of catalog.json that fails is tried this many times in all, this far apart. */
const CATALOG_SAVE_ATTEMPTS = 3;
const CATALOG_SAVE_RETRY_MS = 1000;

export class ToolCatalog {
  private readonly servers = new Map<string, ServerRecord>();
  private index: ToolIndex | undefined;
  /**
   * Per "server\0tool", how its calls so far returned, and the hash of the schema that was of
   * (this bridge's calls, and other bridges' from the state dir): a relisting of the same schema
   * keeps it, a changed schema starts afresh.
   */
  private readonly seen = new Map<string, { seen: ResultsSeen; schema: string }>();
  /** Each entry's schema hash (learned-returns-file.ts toolSchemaHash), made once. */
  private readonly schemas = new WeakMap<ToolEntry, string>();
  /** What calls taught since the state dir's file was last written. */
  private readonly unsaved = new Map<string, LearnedReturn>();
  private learnedScheduled = false;
  private readonly stateDir: string | undefined;
  private readonly log: (message: string) => void;
  private saveQueue: Promise<void> = Promise.resolve();
  private saveScheduled = false;
  private readonly listeners = new Set<() => void>();

  constructor(
    servers: ReadonlyArray<{ name: string; description?: string; fingerprint: string }>,
    stateDir?: string,
    log: (message: string) => void = () => {},
  ) {
    this.stateDir = stateDir;
    this.log = log;
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

  /**
   * The servers changed while the bridge runs: a server whose fingerprint is the same keeps its
   * record and tools (its alias and description follow the new list), a new or changed one
   * starts afresh (from the cache when it has one for its config), a removed one is dropped.
   */
  async reconfigure(servers: ReadonlyArray<{ name: string; description?: string; fingerprint: string }>): Promise<void> {
    const aliases = uniqueAliases(servers.map((s) => s.name));
    const old = new Map(this.servers);
    this.servers.clear();
    servers.forEach((s, i) => {
      const kept = old.get(s.name);
      const record: ServerRecord =
        kept?.fingerprint === s.fingerprint ? kept : { name: s.name, alias: aliases[i]!, state: 'not-started', fingerprint: s.fingerprint };
      const renamed = record.alias !== aliases[i] || record.description !== s.description;
      record.alias = aliases[i]!;
      if (s.description) record.description = s.description;
      else delete record.description;
      // Tool entries carry their server's alias and description.
      if (renamed && record.tools) record.tools = this.entriesFor(record, record.tools.map(listedOf), tasksOf(record.tools));
      this.servers.set(s.name, record);
    });
    this.index = undefined;
    await this.load();
    this.changed(true);
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Reads cached tool lists (any writer's; entries of unknown servers or another config are
   * ignored) and what calls taught of tools' returns (any bridge's, for the schema a tool has).
   */
  async load(): Promise<void> {
    if (!this.stateDir) return;
    await this.loadLearned(this.stateDir);
    const sections = await readCatalogSections(this.stateDir);
    for (const record of this.servers.values()) {
      if (record.tools) continue;
      const cached = cachedTools(sections, record.name, record.fingerprint);
      if (!cached?.tools) continue;
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

  /** `error` is what the sandbox may be told; `detail` (default: the same) what people see. */
  setState(server: string, state: ServerState, error?: string, detail?: string): void {
    const record = this.servers.get(server);
    if (!record) return;
    record.state = state;
    if (error === undefined) {
      delete record.error;
      delete record.detail;
    } else {
      // Kept in catalog.json and shown in the Tools view: never a URL's credentials.
      record.error = redactUrlSecrets(error);
      if (detail !== undefined && detail !== error) record.detail = redactUrlSecrets(detail);
      else delete record.detail;
    }
    this.changed(true);
  }

  /** Records the instructions a server gave when it started (untrusted: cleaned and capped; none: removed). */
  setInstructions(server: string, instructions: string | undefined): void {
    const record = this.servers.get(server);
    if (!record) return;
    const text = instructions ? lines(redactUrlSecrets(instructions), MAX_SERVER_INSTRUCTIONS_CHARS) : '';
    if (text) record.instructions = text;
    else delete record.instructions;
  }

  /** Records a fresh tool list (untrusted: validated and capped), with what was left out. */
  setTools(server: string, tools: readonly unknown[], warning?: string): ToolEntry[] {
    const record = this.servers.get(server);
    if (!record) return [];
    const valid = tools
      .slice(0, MAX_TOOLS_PER_SERVER)
      .map((t) => listedToolSchema.safeParse(t))
      .flatMap((r) => (r.success ? [r.data] : []));
    record.tools = this.entriesFor(record, valid, taskSupportOf(tools));
    record.updatedAt = new Date().toISOString();
    if (warning) record.warning = warning;
    else delete record.warning;
    this.index = undefined;
    this.changed(true);
    return record.tools;
  }

  /** Every tool of every server that has a known list. */
  allTools(): ToolEntry[] {
    return this.records().flatMap((r) => r.tools ?? []);
  }

  /** Ranked search; the tools of `skipServers` are left out (ranked in the ranker, not filtered after). */
  search(query: string, limit: number, skipServers?: ReadonlySet<string>): ToolEntry[] {
    this.index ??= new ToolIndex(this.allTools());
    return this.index.search(query, limit, skipServers);
  }

  /** Ranked search with scores (0 to 1) for sandboxed code: nothing when no tool answers the request. */
  find(query: string, limit: number, skipServers?: ReadonlySet<string>): ToolHit[] {
    this.index ??= new ToolIndex(this.allTools());
    return this.index.find(query, limit, skipServers);
  }

  /** The well-known services a request names that no configured server mentions: what "nothing fits" names. */
  unserved(query: string): string[] {
    this.index ??= new ToolIndex(this.allTools());
    return this.index.unserved(query);
  }

  /**
   * A call of a tool returned (without an error): one text item, or other content. Its return
   * type says `str` while every call seen returned one text item, and the content type after.
   * Returns the new return type when this changed it (the caller's help() follows).
   */
  noteResult(server: string, tool: string, textOnly: boolean): string | undefined {
    const entry = this.servers.get(server)?.tools?.find((t) => t.tool === tool);
    // A tool with an outputSchema returns its structured content, whatever its calls return.
    if (!entry || entry.returns !== undefined) return undefined;
    const key = `${server}\u0000${tool}`;
    const schema = this.schemaOf(entry);
    const before = this.seen.get(key);
    const was = before?.schema === schema ? before.seen : undefined;
    const seen: ResultsSeen = textOnly && was !== 'content' ? 'text' : 'content';
    if (seen === was) return undefined;
    this.seen.set(key, { seen, schema });
    this.remember({ server, tool, schema, seen, learnedAt: Date.now() });
    const returnType = returnTypeOf(entry.returns, seen);
    entry.seen = seen;
    if (returnType === entry.returnType) return undefined;
    entry.returnType = returnType;
    entry.signature = signatureOf(entry.alias, entry.params, returnType);
    this.changed(false);
    return returnType;
  }

  /** Finds a tool by its real name or its alias (its record says, too, whether it runs as a task). */
  findTool(server: string, name: string): ToolEntry | undefined {
    const tools = this.servers.get(server)?.tools ?? [];
    return tools.find((t) => t.tool === name) ?? tools.find((t) => t.alias === name);
  }

  /** Finds a server by its name or alias. */
  findServer(name: string): ServerRecord | undefined {
    return this.servers.get(name) ?? this.records().find((r) => r.alias === name || r.alias === pythonName(name));
  }

  /** A tool's schema hash: what learned returns are of. */
  private schemaOf(entry: ToolEntry): string {
    let schema = this.schemas.get(entry);
    if (schema === undefined) {
      schema = toolSchemaHash(entry.inputSchema, entry.outputSchema);
      this.schemas.set(entry, schema);
    }
    return schema;
  }

  /** What other bridges (and this one before a restart) learned; what this bridge learned itself stays. */
  private async loadLearned(dir: string): Promise<void> {
    const { entries, problem } = await readLearnedReturns(dir);
    if (problem) this.log(problem);
    for (const { server, tool, seen, schema } of entries) {
      const key = `${server}\u0000${tool}`;
      if (!this.seen.has(key)) this.seen.set(key, { seen, schema });
    }
  }

  /** Writes what a call taught to the state dir (bursts coalesced into one write), for the next bridge. */
  private remember(learned: LearnedReturn): void {
    const dir = this.stateDir;
    if (!dir) return;
    this.unsaved.set(`${learned.server}\u0000${learned.tool}`, learned);
    if (this.learnedScheduled) return;
    this.learnedScheduled = true;
    this.saveQueue = this.saveQueue
      .then(() => new Promise((resolve) => setTimeout(resolve, 50)))
      .then(() => {
        this.learnedScheduled = false;
        const batch = [...this.unsaved.values()];
        this.unsaved.clear();
        return saveLearnedReturns(dir, batch);
      })
      .catch((error: unknown) => this.log(`what tools returned was not saved: ${error instanceof Error ? error.message : String(error)}`));
  }

  /** Waits for pending writes of the cache file. */
  async flush(): Promise<void> {
    await this.saveQueue;
  }

  /** `tasks`: the tools that run as tasks, from a fresh listing (the cache file does not keep it). */
  private entriesFor(record: ServerRecord, tools: readonly ListedTool[], tasks?: ReadonlyMap<string, TaskSupport>): ToolEntry[] {
    const aliases = uniqueAliases(tools.map((t) => t.name));
    return tools.map((tool, i) => {
      const params = paramsOf(tool.inputSchema);
      const returns = returnsOf(tool.outputSchema);
      const inputSchema = tool.inputSchema ?? { type: 'object' };
      const schema = toolSchemaHash(inputSchema, tool.outputSchema);
      // What calls taught of this schema (a changed schema may return otherwise).
      const learned = returns === undefined ? this.seen.get(`${record.name}\u0000${tool.name}`) : undefined;
      const seen = learned?.schema === schema ? learned.seen : undefined;
      const returnType = returnTypeOf(returns, seen);
      const taskSupport = tasks?.get(tool.name);
      const entry: ToolEntry = {
        server: record.name,
        serverAlias: record.alias,
        ...(record.description ? { serverDescription: record.description } : {}),
        tool: tool.name,
        alias: aliases[i]!,
        ...(tool.title ? { title: tool.title } : {}),
        description: tool.description ?? '',
        inputSchema,
        ...(tool.outputSchema !== undefined ? { outputSchema: tool.outputSchema } : {}),
        ...(tool.annotations !== undefined ? { annotations: tool.annotations } : {}),
        ...(tool.icons ? { icons: tool.icons } : {}),
        ...(tool._meta ? { _meta: tool._meta } : {}),
        params,
        ...(returns ? { returns } : {}),
        ...(seen ? { seen } : {}),
        returnType,
        signature: signatureOf(aliases[i]!, params, returnType),
        ...(taskSupport ? { taskSupport } : {}),
      };
      this.schemas.set(entry, schema);
      return entry;
    });
  }

  private changed(persist: boolean): void {
    if (persist) this.scheduleSave(50, 1);
    for (const listener of this.listeners) listener();
  }

  /**
   * Bursts (every server starting at once) are coalesced into one write. A write that fails (the
   * lock held too long on a loaded machine, a full disk) is said and tried again: the Tools view
   * reads the servers' states only from this file, and no later change may come to rewrite it.
   */
  private scheduleSave(delayMs: number, attempt: number): void {
    if (!this.stateDir || this.saveScheduled) return;
    this.saveScheduled = true;
    const dir = this.stateDir;
    this.saveQueue = this.saveQueue
      .then(() => new Promise((resolve) => setTimeout(resolve, delayMs)))
      .then(() => {
        this.saveScheduled = false;
        return this.save(dir);
      })
      .catch((error: unknown) => {
        const again = attempt < CATALOG_SAVE_ATTEMPTS;
        this.log(`${CATALOG_FILE} not saved: ${error instanceof Error ? error.message : String(error)}${again ? '; trying again' : ''}`);
        if (again) this.scheduleSave(CATALOG_SAVE_RETRY_MS, attempt + 1);
      });
  }

  private async save(dir: string): Promise<void> {
    const servers: CatalogServers = {};
    for (const record of this.servers.values()) {
      servers[record.name] = {
        fingerprint: record.fingerprint,
        state: record.state,
        // The Tools view shows the full reason; the sandbox never reads this file.
        ...(record.error ? { error: (record.detail ?? record.error).slice(0, 4000) } : {}),
        ...(record.warning ? { warning: record.warning.slice(0, 4000) } : {}),
        ...(record.description ? { description: record.description } : {}),
        ...(record.tools && record.updatedAt
          ? {
              updatedAt: record.updatedAt,
              tools: record.tools.map(listedOf),
            }
          : {}),
      };
    }
    // Only this writer's section is replaced: other bridges of the state dir keep theirs.
    await saveCatalogSection(dir, servers);
  }
}

/** A tool entry as it was listed (to rebuild its entry under a new alias). */
function listedOf(t: ToolEntry): ListedTool {
  return {
    name: t.tool,
    ...(t.title ? { title: t.title } : {}),
    description: t.description,
    inputSchema: t.inputSchema,
    ...(t.outputSchema !== undefined ? { outputSchema: t.outputSchema } : {}),
    ...(t.annotations !== undefined ? { annotations: t.annotations } : {}),
    ...(t.icons ? { icons: t.icons } : {}),
    ...(t._meta ? { _meta: t._meta } : {}),
  } as ListedTool;
}

function tasksOf(tools: readonly ToolEntry[]): Map<string, TaskSupport> {
  return new Map(tools.flatMap((t) => (t.taskSupport ? [[t.tool, t.taskSupport] as const] : [])));
}
