// One proxied MCP server behind an SDK client: started on first use, kept warm, restarted
// after a crash with backoff, every step bounded by a timeout. Its failures stay its own.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ServerConfig } from '../../config/schema.ts';
import type { ToolCatalog, ToolEntry } from '../catalog/catalog.ts';
import { httpKinds, httpTransport, isStdio, stdioTransport } from './transports.ts';

export interface ProxyTimeouts {
  connectMs: number;
  listMs: number;
  callMs: number;
}

export class ServerUnavailableError extends Error {
  override readonly name = 'ServerUnavailableError';
}

const MAX_BACKOFF_MS = 30_000;
const STDERR_TAIL = 2000;
const MAX_PAGES = 50;

export class ServerConnection {
  readonly name: string;
  private readonly config: ServerConfig;
  private readonly catalog: ToolCatalog;
  private readonly timeouts: ProxyTimeouts;
  private readonly log: (message: string) => void;
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private listed = false;
  private failures = 0;
  private retryAt = 0;
  private lastError = '';
  private stderrTail = '';
  private closed = false;

  constructor(name: string, config: ServerConfig, catalog: ToolCatalog, timeouts: ProxyTimeouts, log: (message: string) => void) {
    this.name = name;
    this.config = config;
    this.catalog = catalog;
    this.timeouts = timeouts;
    this.log = log;
  }

  /** The server's tools, listing them (and starting the server) when not known this session. */
  async tools(): Promise<ToolEntry[]> {
    const client = await this.ensureClient();
    if (!this.listed) await this.refreshTools(client);
    return this.catalog.get(this.name)?.tools ?? [];
  }

  async callTool(tool: string, args: Record<string, unknown>, signal: AbortSignal, progress?: () => void): Promise<CallToolResult> {
    const client = await this.ensureClient();
    try {
      const result = await client.callTool({ name: tool, arguments: args }, undefined, {
        signal,
        timeout: this.timeouts.callMs,
        ...(progress ? { onprogress: progress, resetTimeoutOnProgress: false } : {}),
      });
      this.failures = 0;
      return result as CallToolResult;
    } catch (error) {
      throw this.explain(error, `calling ${tool}`);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client ?? (await this.connecting?.catch(() => undefined));
    this.client = undefined;
    await client?.close().catch(() => undefined);
  }

  private async ensureClient(): Promise<Client> {
    if (this.closed) throw new ServerUnavailableError(`server "${this.name}" is shut down`);
    if (this.client) return this.client;
    if (!this.connecting) {
      const wait = this.retryAt - Date.now();
      if (wait > 0) {
        throw new ServerUnavailableError(
          `server "${this.name}" failed: ${this.lastError} (next restart attempt in ${Math.ceil(wait / 1000)} s)`,
        );
      }
      this.connecting = this.connect().finally(() => (this.connecting = undefined));
    }
    return this.connecting;
  }

  private async connect(): Promise<Client> {
    this.catalog.setState(this.name, 'starting');
    const kinds = isStdio(this.config) ? (['stdio'] as const) : httpKinds(this.config);
    let lastError: unknown;
    for (const kind of kinds) {
      const transport = this.transportFor(kind);
      const client = new Client(
        { name: 'code-execution-mode', version: '0.1.0' },
        {
          capabilities: {},
          listChanged: { tools: { autoRefresh: false, debounceMs: 200, onChanged: () => void this.onListChanged() } },
        },
      );
      try {
        await withTimeout(client.connect(transport, { timeout: this.timeouts.connectMs }), this.timeouts.connectMs, `starting server "${this.name}"`);
      } catch (error) {
        lastError = error;
        await client.close().catch(() => undefined);
        continue;
      }
      client.onclose = () => this.onClosed(client);
      this.client = client;
      this.listed = false;
      this.catalog.setState(this.name, 'running');
      this.log(`server ${this.name}: connected (${kind})`);
      return client;
    }
    this.failures++;
    this.retryAt = Date.now() + Math.min(MAX_BACKOFF_MS, 500 * 2 ** (this.failures - 1));
    const error = this.explain(lastError, 'starting');
    this.lastError = error.message;
    this.catalog.setState(this.name, 'error', error.message);
    this.log(`server ${this.name}: ${error.message}`);
    throw error;
  }

  private transportFor(kind: 'stdio' | 'streamable' | 'sse'): Transport {
    if (isStdio(this.config)) {
      const transport = stdioTransport(this.config);
      transport.stderr?.on('data', (chunk: Buffer) => {
        this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL);
      });
      return transport;
    }
    return httpTransport(this.config, kind === 'sse' ? 'sse' : 'streamable');
  }

  private onClosed(client: Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    if (this.closed) return;
    // A crash: the next use restarts it, at once the first time, then with growing backoff.
    this.failures++;
    this.retryAt = this.failures <= 1 ? 0 : Date.now() + Math.min(MAX_BACKOFF_MS, 500 * 2 ** (this.failures - 2));
    this.lastError = `the server exited${this.stderrTail ? `: ${lastLine(this.stderrTail)}` : ''}`;
    this.catalog.setState(this.name, 'error', this.lastError);
    this.log(`server ${this.name}: ${this.lastError}`);
  }

  private async onListChanged(): Promise<void> {
    const client = this.client;
    if (!client) return;
    await this.refreshTools(client).catch((error: unknown) => this.log(`server ${this.name}: relisting tools failed: ${String(error)}`));
  }

  private async refreshTools(client: Client): Promise<void> {
    const tools: unknown[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      let result: Awaited<ReturnType<Client['listTools']>>;
      try {
        result = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.timeouts.listMs });
      } catch (error) {
        throw this.explain(error, 'listing tools');
      }
      tools.push(...result.tools);
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    this.catalog.setTools(this.name, tools);
    this.listed = true;
  }

  private explain(error: unknown, doing: string): Error {
    if (error instanceof ServerUnavailableError) return error;
    const message = error instanceof Error ? error.message : String(error);
    const stderr = this.stderrTail.trim() ? ` (server said: ${lastLine(this.stderrTail)})` : '';
    return new ServerUnavailableError(`server "${this.name}" failed ${doing}: ${message}${!this.client ? stderr : ''}`);
  }
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return (lines[lines.length - 1] ?? '').slice(0, 300);
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${Math.round(ms / 1000)} s`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
