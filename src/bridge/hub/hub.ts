// All proxied servers: the catalog over them, their connections, and the policy. One broken
// or hanging server never blocks another: each call and listing has its own timeout.
import { createHash } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Config, ServerConfig } from '../../config/schema.ts';
import { ToolCatalog, type ToolEntry } from '../catalog/catalog.ts';
import { ServerConnection } from './connection.ts';
import { toolAllowed } from './policy.ts';
import { startsThisBridge } from './transports.ts';

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

export class ProxyHub {
  readonly catalog: ToolCatalog;
  private readonly configs = new Map<string, ServerConfig>();
  private readonly connections = new Map<string, ServerConnection>();
  private readonly refused = new Map<string, string>();
  private readonly log: (message: string) => void;

  constructor(config: Pick<Config, 'servers' | 'proxy'>, options: HubOptions = {}) {
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
    for (const [name, server] of enabled) {
      this.configs.set(name, server);
      if (startsThisBridge(server) && !server.allowSelfProxy) {
        const why = `server "${name}" would start this bridge again and is not proxied (set allowSelfProxy to override)`;
        this.refused.set(name, why);
        this.catalog.setState(name, 'error', why);
        this.log(why);
        continue;
      }
      this.connections.set(name, new ServerConnection(name, server, this.catalog, timeouts, this.log));
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
  async listTools(server: string): Promise<ToolEntry[]> {
    const { connection } = this.resolveServer(server);
    return connection.tools();
  }

  /** Makes sure every enabled server's tools are known: from the disk cache, else by listing. */
  async ensureCatalog(): Promise<void> {
    const missing = this.catalog.records().filter((r) => !r.tools && this.connections.has(r.name));
    await Promise.allSettled(missing.map((r) => this.connections.get(r.name)!.tools()));
  }

  async callTool(server: string, tool: string, args: Record<string, unknown>, signal: AbortSignal, progress?: () => void): Promise<{ server: string; tool: string; result: CallToolResult }> {
    const resolved = this.resolveServer(server);
    let entry = this.catalog.findTool(resolved.name, tool);
    if (!entry) {
      // The list may be stale or not yet known: list once before giving up.
      await resolved.connection.tools();
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
    const result = await resolved.connection.callTool(entry.tool, args, signal, progress);
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

function fingerprint(server: ServerConfig): string {
  const { enabled: _e, description: _d, allowTools: _a, denyTools: _t, ...identity } = server;
  return createHash('sha256').update(JSON.stringify(identity)).digest('hex').slice(0, 16);
}
