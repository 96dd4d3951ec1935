// All proxied servers: the catalog over them, their connections, and the policy. One broken
// or hanging server never blocks another: each call and listing has its own timeout, and
// discovery answers from what is known after a short bounded wait.
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { sep } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Config, ServerConfig } from '../../config/schema.ts';
import { SECRETS_ENV, type Secrets, type ServerSecret } from '../../config/secrets.ts';
import type { VariableContext } from '../../config/variables.ts';
import { ToolCatalog, type ServerState, type ToolEntry } from '../catalog/catalog.ts';
import { ServerConnection, type StartContext } from './connection.ts';
import { toolAllowed } from './policy.ts';
import { isStdio, startsThisBridge } from './transports.ts';

export class ToolCallError extends Error {
  override readonly name: string = 'ToolCallError';
}
export class UnknownServerError extends ToolCallError {
  override readonly name = 'UnknownServerError';
}
export class UnknownToolError extends ToolCallError {
  override readonly name = 'UnknownToolError';
}
export class ToolDeniedError extends ToolCallError {
  override readonly name = 'ToolDeniedError';
}

export interface HubOptions {
  stateDir?: string;
  log?: (message: string) => void;
}

/** The parts of the configuration the hub reads; `secrets` as applySecrets leaves it. */
export type HubConfig = Pick<Config, 'servers' | 'proxy'> & { workspaceFolder?: string | undefined; secrets?: Secrets | undefined };

/** How long search and discovery wait, in all, for servers whose tools are not known yet. */
export const DISCOVERY_WAIT_MS = 1500;

/** A server whose tools are not known (yet), and why. */
export interface NotReady {
  server: string;
  state: ServerState;
  error?: string;
}

/** How a tool call waits for its server to start: cancellable, and off the run's clock. */
export interface WaitOptions {
  signal?: AbortSignal;
  /** Wraps the wait for the server to be started and listed (the run's untimed()). */
  untimed?: <T>(work: Promise<T>) => Promise<T>;
}

export class ProxyHub {
  readonly catalog: ToolCatalog;
  private readonly configs = new Map<string, ServerConfig>();
  private readonly connections = new Map<string, ServerConnection>();
  private readonly refused = new Map<string, string>();
  private readonly log: (message: string) => void;

  constructor(config: HubConfig, options: HubOptions = {}) {
    this.log = options.log ?? (() => {});
    const enabled = Object.entries(config.servers).filter(([, server]) => server.enabled);
    this.catalog = new ToolCatalog(
      enabled.map(([name, server]) => ({
        name,
        ...(server.description ? { description: server.description } : {}),
        fingerprint: fingerprint(server),
      })),
      options.stateDir,
    );
    const timeouts = {
      connectMs: config.proxy.connectTimeoutSeconds * 1000,
      listMs: config.proxy.listTimeoutSeconds * 1000,
      callMs: config.proxy.callTimeoutSeconds * 1000,
    };
    const { [SECRETS_ENV]: _secrets, ...env } = process.env;
    const variables: Omit<VariableContext, 'inputs'> = {
      workspaceFolder: config.workspaceFolder,
      userHome: homedir(),
      pathSeparator: sep,
      env,
      envIgnoresCase: process.platform === 'win32',
    };
    for (const [name, server] of enabled) {
      this.configs.set(name, server);
      if (startsThisBridge(server) && !server.allowSelfProxy) {
        const why = `server "${name}" would start this bridge again and is not proxied (set allowSelfProxy to override)`;
        this.refused.set(name, why);
        this.catalog.setState(name, 'error', why);
        this.log(why);
        continue;
      }
      const start = startContext(server, config.secrets?.[name], variables);
      this.connections.set(name, new ServerConnection(name, server, this.catalog, timeouts, this.log, start));
    }
  }

  async start(): Promise<void> {
    await this.catalog.load();
  }

  /** The server's record by name or alias, or a clear error listing what exists. */
  resolveServer(name: string): { name: string; connection: ServerConnection; config: ServerConfig } {
    const record = this.catalog.findServer(name);
    const refused = record && this.refused.get(record.name);
    if (refused) throw new UnknownServerError(refused);
    const connection = record && this.connections.get(record.name);
    const config = record && this.configs.get(record.name);
    if (!record || !connection || !config) {
      const known = this.catalog.names();
      throw new UnknownServerError(
        `no enabled server "${name}"; available: ${known.length > 0 ? known.join(', ') : 'none configured'}`,
      );
    }
    return { name: record.name, connection, config };
  }

  /** Tools of one server, starting it if its list is not known yet this session. */
  async listTools(server: string, wait: WaitOptions = {}): Promise<ToolEntry[]> {
    const { connection } = this.resolveServer(server);
    return waitFor(connection.tools(), wait);
  }

  /** Makes sure every enabled server's tools are known: from the disk cache, else by listing. */
  async ensureCatalog(): Promise<void> {
    const missing = this.catalog.records().filter((r) => !r.tools && this.connections.has(r.name));
    await Promise.allSettled(missing.map((r) => this.connections.get(r.name)!.tools()));
  }

  /**
   * For search and discovery: starts every server whose tools are not known (cached or listed)
   * and waits for them at most `waitMs` in all, so that a slow or hung server delays nobody.
   * A start already waited for that long is not waited for again. Returns the servers whose
   * tools are still unknown.
   */
  async discover(waitMs = DISCOVERY_WAIT_MS): Promise<NotReady[]> {
    const missing = this.catalog.records().flatMap((r) => (!r.tools && this.connections.has(r.name) ? [this.connections.get(r.name)!] : []));
    await Promise.all(
      missing.map((connection) => {
        const warm = connection.warmUp();
        const since = connection.startingSince;
        return since === undefined ? warm : withDeadline(warm, Math.min(waitMs, since + waitMs - Date.now()));
      }),
    );
    return this.notReady();
  }

  /** Enabled servers whose tools are not known, with their state and error. */
  notReady(): NotReady[] {
    return this.catalog
      .records()
      .filter((r) => !r.tools)
      .map((r) => ({ server: r.name, state: r.state, ...(r.error ? { error: r.error } : {}) }));
  }

  async callTool(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    options: { progress?: () => void; untimed?: WaitOptions['untimed'] } = {},
  ): Promise<{ server: string; tool: string; result: CallToolResult }> {
    const resolved = this.resolveServer(server);
    const wait = { signal, ...(options.untimed ? { untimed: options.untimed } : {}) };
    // A server still starting is waited for (bounded by its connect timeout); a failed one throws.
    await waitFor(resolved.connection.connected(), wait);
    let entry = this.catalog.findTool(resolved.name, tool);
    if (!entry) {
      // The list may be stale or not yet known: list once before giving up.
      await waitFor(resolved.connection.tools(), wait);
      entry = this.catalog.findTool(resolved.name, tool);
    }
    if (!entry) {
      const names = (this.catalog.get(resolved.name)?.tools ?? []).map((t) => t.tool);
      throw new UnknownToolError(
        `server "${resolved.name}" has no tool "${tool}"; its tools: ${names.slice(0, 40).join(', ') || 'none'}${names.length > 40 ? ', ...' : ''}`,
      );
    }
    if (!toolAllowed(resolved.config, entry.tool)) {
      throw new ToolDeniedError(`tool "${entry.tool}" of server "${resolved.name}" is not allowed by the bridge's policy`);
    }
    const result = await resolved.connection.callTool(entry.tool, args, signal, options.progress);
    return { server: resolved.name, tool: entry.tool, result };
  }

  /** Whether policy lets sandboxed code call this tool (for listings). */
  allowed(server: string, tool: string): boolean {
    const config = this.configs.get(server);
    return config !== undefined && toolAllowed(config, tool);
  }

  async close(): Promise<void> {
    await Promise.all([...this.connections.values()].map((c) => c.close()));
    await this.catalog.flush();
  }
}

/** Resolves when `work` settles or after `ms`, whichever comes first. */
async function withDeadline(work: Promise<void>, ms: number): Promise<void> {
  if (ms <= 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/** Waits for a server's start or listing: off the run's clock when asked, stopped by the signal. */
function waitFor<T>(work: Promise<T>, { signal, untimed }: WaitOptions): Promise<T> {
  let waited = work;
  if (signal) {
    waited = signal.aborted
      ? Promise.reject(new Error('the run stopped'))
      : new Promise<T>((resolve, reject) => {
          const onAbort = () => reject(new Error('the run stopped while waiting for the server'));
          signal.addEventListener('abort', onAbort, { once: true });
          work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
        });
    // The start goes on for later calls; its outcome is recorded in the catalog.
    work.catch(() => undefined);
  }
  return untimed ? untimed(waited) : waited;
}

/** What a server's connection needs to start it: variables with its inputs, and its secrets. */
function startContext(server: ServerConfig, secret: ServerSecret | undefined, variables: Omit<VariableContext, 'inputs'>): StartContext {
  const own = isStdio(server) ? server.env : server.headers;
  const stored = (isStdio(server) ? secret?.env : secret?.headers) ?? {};
  // Names whose value is the stored secret (applySecrets merged it): never substituted into.
  const secretKeys = new Set(Object.keys(stored).filter((key) => own[key] === stored[key]));
  const secretValues = secret ? [...Object.values(secret.env), ...Object.values(secret.headers), ...Object.values(secret.inputs ?? {})] : [];
  return { variables: { ...variables, inputs: secret?.inputs ?? {} }, secretKeys, secretValues };
}

function fingerprint(server: ServerConfig): string {
  const { enabled: _e, description: _d, allowTools: _a, denyTools: _t, ...identity } = server;
  return createHash('sha256').update(JSON.stringify(identity)).digest('hex').slice(0, 16);
}
