// One proxied MCP server behind an SDK client: started on first use, kept warm, restarted
// after a crash with backoff, every step bounded by a timeout. Its failures stay its own, and
// say why: the last lines of its stderr (secrets redacted) go into every start error.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ServerConfig } from '../../config/schema.ts';
import { substituteServer, VariableError, type VariableContext } from '../../config/variables.ts';
import type { ToolCatalog, ToolEntry } from '../catalog/catalog.ts';
import { redactor, stderrSummary } from './stderr.ts';
import { httpKinds, httpTransport, isStdio, stdioTransport } from './transports.ts';

export interface ProxyTimeouts {
  connectMs: number;
  listMs: number;
  callMs: number;
}

export class ServerUnavailableError extends Error {
  override readonly name = 'ServerUnavailableError';
}

/** What a connection needs beyond its entry to start the server. */
export interface StartContext {
  /** Facts for `${...}` variables, with this server's stored inputs. */
  variables: VariableContext;
  /** Env and header names whose values are stored secrets: kept literal, always redacted. */
  secretKeys: ReadonlySet<string>;
  /** Every stored secret value of this server (env, headers, inputs), for redaction. */
  secretValues: readonly string[];
}

const SET_SECRET_COMMAND = 'Code Execution Mode: Set Server Secret';
const MAX_BACKOFF_MS = 30_000;
const STDERR_TAIL = 4000;
const MAX_PAGES = 50;

class StartTimeout extends Error {}

export class ServerConnection {
  readonly name: string;
  private readonly config: ServerConfig;
  private readonly catalog: ToolCatalog;
  private readonly timeouts: ProxyTimeouts;
  private readonly log: (message: string) => void;
  private readonly start: StartContext;
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  /** When the start or first listing in progress began. */
  private busySince = 0;
  private listing: Promise<void> | undefined;
  private listed = false;
  private failures = 0;
  private retryAt = 0;
  private lastError = '';
  private stderrTail = '';
  private redact: (text: string) => string;
  private closed = false;

  constructor(name: string, config: ServerConfig, catalog: ToolCatalog, timeouts: ProxyTimeouts, log: (message: string) => void, start: StartContext) {
    this.name = name;
    this.config = config;
    this.catalog = catalog;
    this.timeouts = timeouts;
    this.log = log;
    this.start = start;
    this.redact = redactor(start.secretValues, []);
  }

  /** The server's tools, listing them (and starting the server) when not known this session. */
  async tools(): Promise<ToolEntry[]> {
    const client = await this.ensureClient();
    if (!this.listed) {
      // Concurrent first uses share one listing.
      if (!this.listing) {
        this.busySince = Date.now();
        this.listing = this.refreshTools(client).finally(() => (this.listing = undefined));
      }
      await this.listing;
    }
    return this.catalog.get(this.name)?.tools ?? [];
  }

  /** Resolves once the server is started (starting it if needed); rejects with why it is not. */
  async connected(): Promise<void> {
    await this.ensureClient();
  }

  /** When the start (or first listing) in progress began, as Date.now(); undefined when none is. */
  get startingSince(): number | undefined {
    return this.connecting || this.listing ? this.busySince : undefined;
  }

  /** Starts the server and lists its tools in the background; failures land in the catalog. */
  warmUp(): Promise<void> {
    return this.tools().then(
      () => undefined,
      () => undefined,
    );
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
        throw new ServerUnavailableError(`${this.lastError} (next attempt to start it in ${Math.ceil(wait / 1000)} s)`);
      }
      this.busySince = Date.now();
      this.connecting = this.connect().finally(() => (this.connecting = undefined));
    }
    return this.connecting;
  }

  private async connect(): Promise<Client> {
    this.catalog.setState(this.name, 'starting');
    let config: ServerConfig;
    try {
      config = substituteServer(this.config, this.start.variables, this.start.secretKeys);
    } catch (error) {
      if (!(error instanceof VariableError)) throw error;
      throw this.failed(new ServerUnavailableError(this.variableMessage(error)));
    }
    // Long env and header values may be tokens written straight into the entry.
    const own = isStdio(config) ? config.env : config.headers;
    this.redact = redactor(this.start.secretValues, Object.values(own));
    const kinds = isStdio(config) ? (['stdio'] as const) : httpKinds(config);
    let lastError: unknown;
    for (const kind of kinds) {
      const transport = this.transportFor(config, kind);
      const client = new Client(
        { name: 'code-execution-mode', version: '0.1.0' },
        {
          capabilities: {},
          listChanged: { tools: { autoRefresh: false, debounceMs: 200, onChanged: () => void this.onListChanged() } },
        },
      );
      try {
        await withTimeout(client.connect(transport, { timeout: this.timeouts.connectMs }), this.timeouts.connectMs);
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
    // Let the last of a dying process's stderr arrive before quoting it.
    if (isStdio(config)) await new Promise((resolve) => setTimeout(resolve, 50));
    throw this.failed(this.startError(lastError));
  }

  /** Records a failed start (state, log, backoff) and returns the error to throw. */
  private failed(error: ServerUnavailableError): ServerUnavailableError {
    this.failures++;
    this.retryAt = Date.now() + Math.min(MAX_BACKOFF_MS, 500 * 2 ** (this.failures - 1));
    this.lastError = error.message;
    this.catalog.setState(this.name, 'error', error.message);
    this.log(error.message);
    return error;
  }

  private variableMessage(error: VariableError): string {
    if (error.inputId !== undefined) {
      return `server "${this.name}" cannot start: it uses ${error.variable}, and input "${error.inputId}" has no stored value; set it with the "${SET_SECRET_COMMAND}" command`;
    }
    return `server "${this.name}" cannot start: ${error.message}`;
  }

  private startError(error: unknown): ServerUnavailableError {
    const reason =
      error instanceof StartTimeout || (error instanceof McpError && error.code === ErrorCode.RequestTimeout)
        ? `did not finish starting within ${seconds(this.timeouts.connectMs)} (proxy.connectTimeoutSeconds)`
        : `failed to start: ${error instanceof Error ? error.message : String(error)}`;
    return new ServerUnavailableError(this.redact(`server "${this.name}" ${reason}${this.stderrNote()}`));
  }

  /** "; its stderr ended with: a | b", or nothing when it wrote nothing. */
  private stderrNote(): string {
    const summary = stderrSummary(this.stderrTail, this.redact);
    return summary ? `; its stderr ended with: ${summary}` : '';
  }

  private transportFor(config: ServerConfig, kind: 'stdio' | 'streamable' | 'sse'): Transport {
    if (isStdio(config)) {
      this.stderrTail = '';
      const transport = stdioTransport(config);
      transport.stderr?.on('data', (chunk: Buffer) => {
        this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL);
      });
      return transport;
    }
    return httpTransport(config, kind === 'sse' ? 'sse' : 'streamable');
  }

  private onClosed(client: Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    if (this.closed) return;
    // A crash: the next use restarts it, at once the first time, then with growing backoff.
    this.failures++;
    this.retryAt = this.failures <= 1 ? 0 : Date.now() + Math.min(MAX_BACKOFF_MS, 500 * 2 ** (this.failures - 2));
    this.lastError = this.redact(`server "${this.name}" exited${this.stderrNote()}`);
    this.catalog.setState(this.name, 'error', this.lastError);
    this.log(this.lastError);
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
    return new ServerUnavailableError(this.redact(`server "${this.name}" failed ${doing}: ${message}${!this.client ? this.stderrNote() : ''}`));
  }
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new StartTimeout()), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
