// All proxied servers: the catalog over them, their connections, and the policy. One broken
// or hanging server never blocks another: each call and listing has its own timeout, and
// discovery answers from what is known after a short bounded wait.
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { sep } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import type { Config, ServerConfig } from '../../config/schema.ts';
import { SECRETS_ENV, type Secrets, type ServerSecret } from '../../config/secrets.ts';
import { redactUrlSecrets } from '../../config/url-secrets.ts';
import { substituteServer, type VariableContext } from '../../config/variables.ts';
import { ToolCatalog, type ServerState, type ToolEntry } from '../catalog/catalog.ts';
import type { ToolHit } from '../catalog/search.ts';
import { confirmationNeeded, ConfirmationNeededError, noOneToAsk, type ConfirmationRequest } from './confirm.ts';
import { ConsentGate, ConsentNeededError, type ConsentState } from '../../state/consent.ts';
import { ServerConnection, type ProxyTimeouts, type RelaySetting, type ServerLogMessage, type StartContext } from './connection.ts';
import { jsonBytes, ProxyLimitError, type ProxyLimits } from './limits.ts';
import { sizeText } from '../../shared/byte-size.ts';
import { toolAllowed } from './policy.ts';
import { markerEnv, nestedRefusal, startsThisBridge } from './self-proxy.ts';
import { isStdio } from './transports.ts';
import { HubOAuth } from './oauth/hub-oauth.ts';
import type { ErrorKind, KindedError } from '../../shared/error-kinds.ts';
import type { RunCall, RunWait } from '../run-call.ts';

export abstract class ToolCallError extends Error implements KindedError {
  abstract readonly kind: ErrorKind;
}
export class UnknownServerError extends ToolCallError {
  override readonly name = 'UnknownServerError';
  readonly kind = 'unknown-server';
}
export class UnknownToolError extends ToolCallError {
  override readonly name = 'UnknownToolError';
  readonly kind = 'unknown-tool';
}
export class ToolDeniedError extends ToolCallError {
  override readonly name = 'ToolDeniedError';
  readonly kind = 'denied';
}

export interface HubOptions {
  stateDir?: string;
  log?: (message: string) => void;
  /** The bridge's own environment (for the nesting marker); process.env by default. */
  env?: NodeJS.ProcessEnv;
  /** Where proxied servers' log messages go (already rate-limited per server). */
  serverLog?: (server: string, message: ServerLogMessage) => void;
  /** Told when a server says its resources or prompts changed. */
  serverListChanged?: (server: string, kind: 'resources' | 'prompts') => void;
  /** The bridge's client, for proxied servers' requests to theirs (roots, elicitation, sampling). */
  relay?: RelaySetting;
  /** false: OAuth servers use stored tokens only and never begin a sign-in (a hub beside the bridge). */
  interactiveSignIn?: boolean;
}

/** The parts of the configuration the hub reads; `secrets` as applySecrets leaves it. */
export type HubConfig = Pick<Config, 'servers' | 'proxy' | 'consent'> & {
  workspaceFolder?: string | undefined;
  secrets?: Secrets | undefined;
  tokenKey?: Buffer | undefined;
};

/** A server whose tools are not known (yet), and why. */
export interface NotReady {
  server: string;
  state: ServerState | Exclude<ConsentState, 'allowed'>;
  error?: string;
}

export class ProxyHub {
  readonly catalog: ToolCatalog;
  private readonly configs = new Map<string, ServerConfig>();
  private readonly connections = new Map<string, ServerConnection>();
  /** Makes a fresh connection: a revoked server's old one is closed for good. */
  private readonly connectionMakers = new Map<string, () => ServerConnection>();
  private readonly consent: ConsentGate;
  private readonly refused = new Map<string, string>();
  private readonly log: (message: string) => void;
  /** Shared with every connection, and updated in place by reconfigure(): new calls read the new values. */
  private readonly limits: ProxyLimits;
  private readonly timeouts: ProxyTimeouts;
  /** How long search and discovery wait, in all, for servers whose tools are not known yet. */
  discoveryWaitMs: number;
  /** OAuth sign-ins and token files (in the state dir, so only with one). */
  private readonly oauth: HubOAuth | undefined;
  private readonly options: HubOptions;
  /** Why this bridge must not start stdio servers (it is itself started by one), if so. */
  private readonly nested: string | undefined;
  private readonly variables: Omit<VariableContext, 'inputs'>;
  private secrets: Secrets | undefined;
  /** Servers taken out of the configuration while the bridge runs: a call to one says so. */
  private readonly removed = new Set<string>();
  private closed = false;

  constructor(config: HubConfig, options: HubOptions = {}) {
    // Whatever a server start or failure says (the SDK's errors quote the URL), no URL's credentials.
    const log = options.log;
    this.log = log ? (message) => log(redactUrlSecrets(message)) : () => {};
    this.consent = new ConsentGate(config.consent, this.log);
    this.options = options;
    const enabled = enabledServers(config);
    this.catalog = new ToolCatalog(
      enabled.map(([name, server]) => catalogEntry(name, server)),
      options.stateDir,
      this.log,
    );
    this.timeouts = timeoutsOf(config.proxy);
    this.limits = { ...config.proxy };
    this.discoveryWaitMs = config.proxy.discoveryWaitSeconds * 1000;
    options.relay?.relay.limit(config.proxy);
    this.oauth = options.stateDir
      ? new HubOAuth(options.stateDir, config.tokenKey, this.log, undefined, options.interactiveSignIn ?? true)
      : undefined;
    this.nested = nestedRefusal(options.env ?? process.env);
    const { [SECRETS_ENV]: _secrets, ...env } = process.env;
    this.variables = {
      workspaceFolder: config.workspaceFolder,
      userHome: homedir(),
      pathSeparator: sep,
      env,
      envIgnoresCase: process.platform === 'win32',
    };
    this.secrets = config.secrets;
    for (const [name, server] of enabled) this.addServer(name, server);
    this.consent.watch((name, state, changed) => void this.enforceConsent(name, state, changed));
  }

  /** Sets up a server's connection (not started), or records why it is refused. */
  private addServer(name: string, server: ServerConfig): void {
    this.removed.delete(name);
    this.configs.set(name, server);
    const start = startContext(server, this.secrets?.[name], this.variables);
    const why =
      isStdio(server) && this.nested
        ? `server "${name}" is not started: ${this.nested}`
        : startsThisBridge(resolvedOrAsIs(server, start.variables, start.secretKeys)) && !server.allowSelfProxy
          ? `server "${name}" would start this bridge again and is not proxied (set allowSelfProxy to override)`
          : undefined;
    if (why) {
      this.refused.set(name, why);
      this.catalog.setState(name, 'error', why);
      this.log(why);
      return;
    }
    if (isStdio(server)) start.env = markerEnv(server, this.options.env ?? process.env);
    this.oauth?.attach(start, name, server);
    const options = this.options;
    const make = () => {
      const connection = new ServerConnection(name, server, this.catalog, this.timeouts, this.log, start, this.limits);
      const serverLog = options.serverLog;
      if (serverLog) connection.serverLog = (message) => serverLog(name, message);
      connection.relay = options.relay;
      const listChanged = options.serverListChanged;
      if (listChanged) connection.listChanged = (kind) => listChanged(name, kind);
      return connection;
    };
    this.connectionMakers.set(name, make);
    this.connections.set(name, make());
  }

  /** Closes a server's connection and forgets it (removed, or about to be set up with a new config). */
  private async dropServer(name: string): Promise<void> {
    const connection = this.connections.get(name);
    this.connections.delete(name);
    this.connectionMakers.delete(name);
    this.configs.delete(name);
    this.refused.delete(name);
    await connection?.close();
  }

  /**
   * The configuration changed while the bridge runs: new servers are set up (started on first
   * use), removed ones closed, those whose definition or stored secrets changed closed and set
   * up afresh; the others keep their connections. Limits and timeouts apply to calls made from
   * now on. Returns the names of the servers added, removed and changed.
   */
  async reconfigure(config: HubConfig): Promise<{ added: string[]; removed: string[]; changed: string[] }> {
    Object.assign(this.limits, config.proxy);
    Object.assign(this.timeouts, timeoutsOf(config.proxy));
    this.discoveryWaitMs = config.proxy.discoveryWaitSeconds * 1000;
    this.options.relay?.relay.limit(config.proxy);
    const secretsBefore = this.secrets;
    this.secrets = config.secrets;
    this.consent.update(config.consent);
    const enabled = new Map(enabledServers(config));
    const before = new Map(this.configs);
    const removed = [...before.keys()].filter((name) => !enabled.has(name));
    const added = [...enabled.keys()].filter((name) => !before.has(name));
    // Env and header secrets are in the server's entry (applySecrets): its fingerprint changes. The
    // values of `${input:ID}` are not: a server whose stored secrets changed starts afresh too.
    const newSecret = (name: string) => JSON.stringify(secretsBefore?.[name] ?? {}) !== JSON.stringify(config.secrets?.[name] ?? {});
    const restart = (name: string) => fingerprint(before.get(name)!) !== fingerprint(enabled.get(name)!) || newSecret(name);
    const changed = [...enabled].flatMap(([name, server]) => {
      const old = before.get(name);
      return old && (restart(name) || JSON.stringify(old) !== JSON.stringify(server)) ? [name] : [];
    });
    const restarted = changed.filter(restart);
    await Promise.all([...removed, ...restarted].map((name) => this.dropServer(name)));
    for (const name of removed) this.removed.add(name);
    await this.catalog.reconfigure([...enabled].map(([name, server]) => catalogEntry(name, server)));
    for (const name of [...added, ...restarted]) this.addServer(name, enabled.get(name)!);
    // The catalog resets a server whose entry changed; one restarted for its inputs alone is reset here.
    for (const name of restarted) {
      const sameEntry = fingerprint(before.get(name)!) === fingerprint(enabled.get(name)!);
      if (sameEntry && !this.refused.has(name)) this.catalog.setState(name, 'not-started');
    }
    // A change of policy only (tools allowed, confirmations, description): the connection stays.
    for (const name of changed.filter((n) => !restarted.includes(n))) this.configs.set(name, enabled.get(name)!);
    if (added.length + removed.length + changed.length > 0)
      this.log(
        `servers reconfigured: ${[['added', added] as const, ['removed', removed] as const, ['changed', changed] as const]
          .filter(([, names]) => names.length > 0)
          .map(([what, names]) => `${what} ${names.join(', ')}`)
          .join('; ')}`,
      );
    return { added, removed, changed };
  }

  /** Whether the user allows the server (always, for servers that need no consent). */
  consentState(server: string): ConsentState {
    return this.consent.state(server);
  }

  /** What sandboxed code is told about a server that is not allowed. */
  consentReason(server: string): string {
    return this.consent.reason(server);
  }

  /** Servers that could be started now: connected, and allowed. */
  private usable(server: string): boolean {
    return this.connections.has(server) && this.consent.state(server) === 'allowed';
  }

  /** Asks the user about the servers among these that wait for consent. */
  private askConsent(servers: readonly string[]): void {
    this.consent.request(servers.filter((s) => this.connections.has(s) && this.consent.gated(s)));
  }

  /**
   * Every check of the decisions: a server not allowed now is stopped if its connection was ever
   * started (running, starting, or waiting to restart), even when no change was seen (allowed,
   * started and revoked between two checks). The next allowed use starts it afresh.
   */
  private async enforceConsent(name: string, state: ConsentState, changed: boolean): Promise<void> {
    if (changed)
      this.log(`server "${name}": ${state === 'allowed' ? 'the user allowed it' : `not allowed (${state}); stopped if it was running`}`);
    const make = this.connectionMakers.get(name);
    const old = this.connections.get(name);
    if (state === 'allowed' || !make || !old?.started || this.closed) return;
    if (!changed) this.log(`server "${name}": not allowed (${state}); stopped`);
    this.connections.set(name, make());
    await old.close();
    this.catalog.setState(name, 'not-started');
  }

  async start(): Promise<void> {
    await this.catalog.load();
  }

  /** The server's record by name or alias, or a clear error listing what exists. */
  resolveServer(name: string): { name: string; connection: ServerConnection; config: ServerConfig } {
    const record = this.catalog.findServer(name);
    const refused = record && this.refused.get(record.name);
    if (refused) throw new UnknownServerError(refused);
    if (record && this.connections.has(record.name) && this.consent.state(record.name) !== 'allowed') {
      this.askConsent([record.name]);
      throw new ConsentNeededError(this.consent.reason(record.name));
    }
    const connection = record && this.connections.get(record.name);
    const config = record && this.configs.get(record.name);
    if (!record || !connection || !config) {
      const known = this.catalog.names();
      if (this.removed.has(name))
        throw new UnknownServerError(
          `server "${name}" was removed from the bridge's configuration; available: ${known.length > 0 ? known.join(', ') : 'none configured'}`,
        );
      throw new UnknownServerError(`no enabled server "${name}"; available: ${known.length > 0 ? known.join(', ') : 'none configured'}`);
    }
    return { name: record.name, connection, config };
  }

  /** Tools of one server, starting it if its list is not known yet this session. */
  async listTools(server: string, wait: RunWait = {}): Promise<ToolEntry[]> {
    const { connection } = this.resolveServer(server);
    return waitFor(connection.tools(), wait);
  }

  /**
   * For search and discovery: starts every server whose tools are not known (cached or listed)
   * and waits for them at most `waitMs` in all, so that a slow or hung server delays nobody.
   * A start already waited for that long is not waited for again. `Infinity` waits for every
   * start or listing to end (the Tools view's refresh). Returns the servers whose tools are still unknown.
   */
  async discover(waitMs = this.discoveryWaitMs): Promise<NotReady[]> {
    this.askConsent(this.catalog.names());
    const missing = this.catalog.records().flatMap((r) => (!r.tools && this.usable(r.name) ? [this.connections.get(r.name)!] : []));
    await Promise.all(
      missing.map((connection) => {
        const warm = connection.warmUp();
        const since = connection.startingSince;
        return since === undefined || waitMs === Infinity ? warm : withDeadline(warm, Math.min(waitMs, since + waitMs - Date.now()));
      }),
    );
    return this.notReady();
  }

  /**
   * Lists every server that may be used afresh, starting it if needed, and waits for every
   * listing to end: the Tools view's Refresh, which must not stop at a cached list. Returns the
   * servers whose tools are still unknown.
   */
  async refresh(): Promise<NotReady[]> {
    this.askConsent(this.catalog.names());
    await Promise.all(this.catalog.records().flatMap((r) => (this.usable(r.name) ? [this.connections.get(r.name)!.listAgain()] : [])));
    return this.notReady();
  }

  /** Enabled servers whose tools are not known, with their state and error. */
  notReady(): NotReady[] {
    return this.catalog.records().flatMap((r): NotReady[] => {
      const consent = this.consent.state(r.name);
      if (consent !== 'allowed') return [{ server: r.name, state: consent }];
      return r.tools ? [] : [{ server: r.name, state: r.state, ...(r.error ? { error: r.error } : {}) }];
    });
  }

  /** Ranked search over the tools of the servers that may be used (a server awaiting consent is not searched). */
  search(query: string, limit: number): ToolEntry[] {
    const hidden = this.catalog.names().filter((name) => this.consent.state(name) !== 'allowed');
    return this.catalog.search(query, limit, hidden.length > 0 ? new Set(hidden) : undefined);
  }

  /** The same for sandboxed code, each hit with its score (0 to 1): nothing when no tool answers the request. */
  find(query: string, limit: number): ToolHit[] {
    const hidden = this.catalog.names().filter((name) => this.consent.state(name) !== 'allowed');
    return this.catalog.find(query, limit, hidden.length > 0 ? new Set(hidden) : undefined);
  }

  async callTool(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    options: {
      progress?: (progress: Progress) => void;
      /** The run making the call (for the relay's record, and whose clock its waits pause). */
      run?: RunCall;
      /** Asks the user about a call that needs confirmation; resolves to go on, throws to refuse. */
      confirm?: (request: ConfirmationRequest) => Promise<void>;
    } = {},
  ): Promise<{ server: string; tool: string; result: CallToolResult }> {
    const bytes = jsonBytes(args);
    if (bytes > this.limits.maxArgumentBytes) {
      throw new ProxyLimitError(
        `the arguments are ${sizeText(bytes)} as JSON, over the ${sizeText(this.limits.maxArgumentBytes)} a call may send (proxy.maxArgumentBytes)`,
      );
    }
    const resolved = this.resolveServer(server);
    const wait: RunWait = { signal, untimed: options.run?.untimed };
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
    if (confirmationNeeded(resolved.config, entry)) {
      if (!options.confirm) throw new ConfirmationNeededError(noOneToAsk(resolved.name, entry.tool, 'this bridge cannot ask here'));
      await options.confirm({
        server: resolved.name,
        tool: entry.tool,
        ...(entry.title ? { title: entry.title } : {}),
        ...(entry.annotations !== undefined ? { annotations: entry.annotations } : {}),
        arguments: args,
        timeoutMs: (resolved.config.confirmTimeoutSeconds ?? 120) * 1000,
      });
    }
    const result = await resolved.connection.callTool(entry.tool, args, signal, options.progress, options.run);
    return { server: resolved.name, tool: entry.tool, result };
  }

  /** Whether policy lets sandboxed code call this tool (for listings). */
  allowed(server: string, tool: string): boolean {
    const config = this.configs.get(server);
    return config !== undefined && toolAllowed(config, tool);
  }

  /** The byte caps on what servers send and sandboxed code sends them. */
  get proxyLimits(): ProxyLimits {
    return this.limits;
  }

  /**
   * A request of a server's resources or prompts for sandboxed code (see sandbox-api/resources.ts): the
   * server is resolved as for a tool call (enabled, not refused, allowed by the user), started
   * if needed (off the run's clock), then asked.
   */
  async serverRequest<T>(
    server: string,
    capability: 'resources' | 'prompts',
    doing: string,
    send: (client: Client, options: RequestOptions) => Promise<T>,
    wait: Pick<RunCall, 'signal' | 'untimed'>,
  ): Promise<{ server: string; result: T }> {
    const resolved = this.resolveServer(server);
    await waitFor(resolved.connection.connected(), wait);
    const result = await resolved.connection.request(capability, doing, send, wait.signal);
    return { server: resolved.name, result };
  }

  /** The bridge's client changed its roots: every running server that was told of roots is told. */
  rootsChanged(): void {
    for (const connection of this.connections.values()) connection.rootsChanged();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.consent.close();
    this.oauth?.close();
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
function waitFor<T>(work: Promise<T>, { signal, untimed }: RunWait): Promise<T> {
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
  const secretValues = secret
    ? [...Object.values(secret.env), ...Object.values(secret.headers), ...Object.values(secret.inputs ?? {})]
    : [];
  return { variables: { ...variables, inputs: secret?.inputs ?? {} }, secretKeys, secretValues };
}

/** The entry with its variables filled in where that works (to see where it really points). */
function resolvedOrAsIs(server: ServerConfig, variables: VariableContext, secretKeys: ReadonlySet<string>): ServerConfig {
  try {
    return substituteServer(server, variables, secretKeys);
  } catch {
    return server;
  }
}

function enabledServers(config: HubConfig): Array<[string, ServerConfig]> {
  return Object.entries(config.servers).filter(([, server]) => server.enabled);
}

function catalogEntry(name: string, server: ServerConfig): { name: string; description?: string; fingerprint: string } {
  return { name, ...(server.description ? { description: server.description } : {}), fingerprint: fingerprint(server) };
}

function timeoutsOf(proxy: HubConfig['proxy']): ProxyTimeouts {
  return {
    connectMs: proxy.connectTimeoutSeconds * 1000,
    listMs: proxy.listTimeoutSeconds * 1000,
    callMs: proxy.callTimeoutSeconds * 1000,
  };
}

function fingerprint(server: ServerConfig): string {
  const { enabled: _e, description: _d, allowTools: _a, denyTools: _t, ...identity } = server;
  return createHash('sha256').update(JSON.stringify(identity)).digest('hex').slice(0, 16);
}
