// One proxied MCP server behind an SDK client: started on first use, kept warm, restarted
// after a crash with backoff, every step bounded by a timeout. The server is untrusted: what
// it sends is capped (message size, tool list, notification rate), and its failures are told
// twice: in full (its stderr, redacted) to the log and the Tools view, and in our words only
// to sandboxed code.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { type CallToolResult, ErrorCode, McpError, type Progress } from '@modelcontextprotocol/sdk/types.js';
import type { ServerConfig } from '../../config/schema.ts';
import { substituteServer, VariableError, type VariableContext } from '../../config/variables.ts';
import { listedToolSchema } from '../../state/catalog-file.ts';
import type { ToolCatalog, ToolEntry } from '../catalog/catalog.ts';
import { exitText } from './failures.ts';
import { oversizeReason, ProxyLimitError, type ProxyLimits } from './limits.ts';
import { connectLink, endLink, openLink, type Link, type RelaySetting, type ServerLogMessage } from './link.ts';
import type { RunCall } from '../run-call.ts';
import { Relister } from './relister.ts';
import { ServerError, ServerUnavailableError } from './server-errors.ts';
import { DropNotice, ServerLogLimiter } from './server-notices.ts';
import { ServerVoice } from './server-voice.ts';
import { callAsTask } from './task-call.ts';
import { urlElicitationsOf } from './url-elicitation.ts';
import { MAX_PAGES, readToolList } from './tool-list.ts';
import { ServerOAuth } from './oauth/server-oauth.ts';
import { httpKinds, isStdio } from './transports.ts';

export { bareErrorMessage, ServerError, ServerUnavailableError } from './server-errors.ts';
export type { RelaySetting, ServerLogMessage } from './link.ts';

export interface ProxyTimeouts {
  connectMs: number;
  listMs: number;
  callMs: number;
}

/** What a connection needs beyond its entry to start the server. */
export interface StartContext {
  /** Facts for `${...}` variables, with this server's stored inputs. */
  variables: VariableContext;
  /** Env and header names whose values are stored secrets: kept literal, always redacted. */
  secretKeys: ReadonlySet<string>;
  /** Every stored secret value of this server (env, headers, inputs), for redaction. */
  secretValues: readonly string[];
  /** Added to a stdio server's environment last (the nesting marker). */
  env?: Record<string, string>;
  /** The MCP authorization flow of an HTTP server (oauth/). */
  oauth?: ServerOAuth | undefined;
}

const MAX_BACKOFF_MS = 30_000;

export class ServerConnection {
  readonly name: string;
  private readonly config: ServerConfig;
  private readonly catalog: ToolCatalog;
  private readonly timeouts: ProxyTimeouts;
  private readonly limits: ProxyLimits;
  private readonly log: (message: string) => void;
  private readonly start: StartContext;
  private link: Link | undefined;
  private connecting: Promise<Link> | undefined;
  /** The attempt in progress of connect(): closed at once by close(). */
  private attempt: Link | undefined;
  private everStarted = false;
  /** When the start or first listing in progress began. */
  private busySince = 0;
  private listing: Promise<void> | undefined;
  private listed = false;
  private failures = 0;
  private retryAt = 0;
  private lastError = '';
  /** How its failures are told (redacted, with its stderr). */
  private readonly voice: ServerVoice;
  private closed = false;
  private readonly relister: Relister<Link>;
  private readonly logLimiter: ServerLogLimiter;
  private readonly dropNotice: DropNotice;
  private lastWarning = '';
  /** Where the server's log messages go (set by the hub); rate-limited here. */
  serverLog: ((message: ServerLogMessage) => void) | undefined;
  /** Told when the server says its resources or prompts changed (set by the hub; rate-limited by the transport). */
  listChanged: ((kind: 'resources' | 'prompts') => void) | undefined;
  /** Where the server's requests to its client go (set by the hub); without it, none are declared. */
  relay: RelaySetting | undefined;
  /** Tool calls in flight, one entry each, for the relay (whose runs to pause). */
  private readonly inFlight = new Set<{ run: RunCall | undefined }>();

  constructor(
    name: string,
    config: ServerConfig,
    catalog: ToolCatalog,
    timeouts: ProxyTimeouts,
    log: (message: string) => void,
    start: StartContext,
    limits: ProxyLimits,
  ) {
    this.name = name;
    this.config = config;
    this.catalog = catalog;
    this.timeouts = timeouts;
    this.limits = limits;
    this.log = log;
    this.start = start;
    this.voice = new ServerVoice(name, {
      secretValues: start.secretValues,
      oauth: start.oauth,
      connectMs: timeouts.connectMs,
      maxResultBytes: limits.maxResultBytes,
    });
    this.relister = new Relister(
      (link) => this.relist(link),
      (link) => this.link === link && !this.closed,
    );
    this.logLimiter = new ServerLogLimiter(name);
    this.dropNotice = new DropNotice(name, limits.maxNotificationsPerSecond, log);
  }

  /** The server's tools, listing them (and starting the server) when not known this session. */
  async tools(): Promise<ToolEntry[]> {
    const link = await this.ensureLink();
    if (!this.listed) {
      // Concurrent first uses share one listing.
      if (!this.listing) {
        this.busySince = Date.now();
        this.listing = this.listTools(link).finally(() => (this.listing = undefined));
      }
      await this.listing;
    }
    return this.catalog.get(this.name)?.tools ?? [];
  }

  /** Resolves once the server is started (starting it if needed); rejects with why it is not. */
  async connected(): Promise<void> {
    await this.ensureLink();
  }

  /** Whether the server was ever started (or a start tried) through this connection. */
  get started(): boolean {
    return this.everStarted;
  }

  /** When the start (or first listing) in progress began, as Date.now(); undefined when none is. */
  get startingSince(): number | undefined {
    return this.connecting || this.listing ? this.busySince : undefined;
  }

  /** Lists the tools again (a listing in progress is shared), starting the server if needed; failures land in the catalog. */
  listAgain(): Promise<void> {
    if (!this.listing) this.listed = false;
    return this.warmUp();
  }

  /** Starts the server and lists its tools in the background; failures land in the catalog. */
  warmUp(): Promise<void> {
    return this.tools().then(
      () => undefined,
      () => undefined,
    );
  }

  async callTool(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    progress?: (progress: Progress) => void,
    run?: RunCall,
  ): Promise<CallToolResult> {
    const link = await this.ensureLink();
    // Whether the tool runs as a task is said by the listing: list once this session if not yet.
    if (!this.listed) await (run?.untimed ? run.untimed(this.tools()) : this.tools()).catch(() => undefined);
    const entry = { run };
    this.inFlight.add(entry);
    try {
      return await this.callOnce(link, tool, args, signal, progress, run, true);
    } finally {
      this.inFlight.delete(entry);
    }
  }

  /** The runs of the calls in flight, once per call; calls made outside a run have none to pause. */
  private *callsInFlight(): Iterable<RunCall> {
    for (const { run } of this.inFlight) if (run) yield run;
  }

  private async callOnce(
    link: Link,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    progress: ((progress: Progress) => void) | undefined,
    run: RunCall | undefined,
    mayRetry: boolean,
  ): Promise<CallToolResult> {
    // A controller per call, linked to the run's signal only while the call is in flight: the SDK
    // never removes its abort listener from a request that completed, so handing it the run's
    // signal would cancel, at the end of the run, every call the run ever made.
    const call = new AbortController();
    const abort = () => call.abort(signal.reason);
    if (signal.aborted) abort();
    else signal.addEventListener('abort', abort, { once: true });
    const options = {
      signal: call.signal,
      timeout: this.timeouts.callMs,
      ...(progress ? { onprogress: progress, resetTimeoutOnProgress: false } : {}),
    };
    let failure: unknown;
    try {
      // Whether the tool runs as a task is the catalog's to say (from this bridge's listing of it).
      const support = this.catalog.findTool(this.name, tool)?.taskSupport;
      const result =
        support && link.client.getServerCapabilities()?.tasks?.requests?.tools?.call
          ? await callAsTask(
              link.client,
              { name: tool, arguments: args },
              options,
              (status) => progress?.(status),
              (taskId, answer) =>
                this.log(this.detail(`server ${this.name}: task ${taskId} of ${tool} cancelled (tasks/cancel); ${answer}`)),
            )
          : await link.client.callTool({ name: tool, arguments: args }, undefined, options);
      this.failures = 0;
      return result as CallToolResult;
    } catch (error) {
      failure = error;
    } finally {
      signal.removeEventListener('abort', abort);
    }
    // The server asked for a sign-in (a 401, or a 403 for a wider scope): waited for, then the call is made once more.
    if (mayRetry && this.signInBegun(failure)) {
      await this.awaitSignIn(signal, run?.untimed);
      return this.callOnce(link, tool, args, signal, progress, run, false);
    }
    // A URL elicitation is what the call needs (-32042): asked of the bridge's client, then the call is made once more.
    if (
      mayRetry &&
      !signal.aborted &&
      failure instanceof McpError &&
      failure.code === ErrorCode.UrlElicitationRequired &&
      this.relay?.relay.canElicitUrl()
    ) {
      const elicitations = urlElicitationsOf(failure.data);
      if (elicitations.length > 0) {
        const runs = run ? [run.runId] : [];
        let accepted = true;
        for (const params of elicitations) {
          const ask = this.relay.relay.elicitUrl(params, { server: this.name, runs, signal, stopped: () => 'the run stopped' });
          const answer = await (run?.untimed ? run.untimed(ask) : ask).catch(() => undefined);
          if (answer?.action !== 'accept') accepted = false;
          if (!accepted) break;
        }
        if (accepted) return this.callOnce(link, tool, args, signal, progress, run, false);
        const explained = this.explain(failure, `calling ${tool}`, link);
        if (explained instanceof ServerError)
          throw new ServerError(
            `${explained.message} (the user was asked to open the URL and did not accept)`,
            explained.code,
            explained.data,
          );
        throw explained;
      }
    }
    throw this.explain(failure, `calling ${tool}`, link);
  }

  /** Tells the server its roots changed (the bridge's client said so), when it was told of roots. */
  rootsChanged(): void {
    const link = this.link;
    if (!link?.declared.roots) return;
    link.client.sendRootsListChanged().catch(() => undefined);
  }

  /**
   * One request of the server's resources or prompts (resources/list, resources/read,
   * resources/templates/list, prompts/list, prompts/get), with the call timeout and the run's
   * signal; `capability` is what the server must declare, or the request is not sent. The SDK is
   * used here only, with the tool calls above: the one place to change for another SDK.
   */
  async request<T>(
    capability: 'resources' | 'prompts',
    doing: string,
    send: (client: Client, options: RequestOptions) => Promise<T>,
    signal: AbortSignal,
  ): Promise<T> {
    const link = await this.ensureLink();
    if (!link.client.getServerCapabilities()?.[capability]) {
      throw new ServerUnavailableError(`server "${this.name}" offers no ${capability} (it does not declare the capability)`);
    }
    const call = new AbortController();
    const abort = () => call.abort(signal.reason);
    if (signal.aborted) abort();
    else signal.addEventListener('abort', abort, { once: true });
    try {
      const result = await send(link.client, { signal: call.signal, timeout: this.timeouts.callMs });
      this.failures = 0;
      return result;
    } catch (error) {
      throw this.explain(error, doing, link);
    } finally {
      signal.removeEventListener('abort', abort);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.relister.cancel();
    this.logLimiter.close();
    // A start waiting for the browser ends now too.
    this.start.oauth?.cancel();
    // A start in progress ends now (its process too), not once it connects or times out.
    await this.attempt?.client.close().catch(() => undefined);
    const link = this.link ?? (await this.connecting?.catch(() => undefined));
    this.link = undefined;
    // A Streamable HTTP session is ended (DELETE) too.
    await endLink(link);
  }

  private async ensureLink(): Promise<Link> {
    if (this.closed) throw new ServerUnavailableError(`server "${this.name}" is shut down`);
    if (this.link) return this.link;
    if (!this.connecting) {
      const wait = this.retryAt - Date.now();
      if (wait > 0) {
        throw new ServerUnavailableError(`${this.lastError} (next attempt to start it in ${Math.ceil(wait / 1000)} s)`);
      }
      this.busySince = Date.now();
      this.everStarted = true;
      this.connecting = this.connect().finally(() => (this.connecting = undefined));
    }
    return this.connecting;
  }

  private async connect(): Promise<Link> {
    this.catalog.setState(this.name, 'starting');
    // What the upstream client declares is what the bridge's client declared: known once it initialized.
    await this.relay?.relay.ready();
    let config: ServerConfig;
    try {
      config = substituteServer(this.config, this.start.variables, this.start.secretKeys);
    } catch (error) {
      if (!(error instanceof VariableError)) throw error;
      throw this.failed(new ServerUnavailableError(this.voice.variableMessage(error)));
    }
    // Long env and header values may be tokens written straight into the entry.
    const own = isStdio(config) ? config.env : config.headers;
    this.voice.entryValues(Object.values(own));
    const kinds = isStdio(config) ? (['stdio'] as const) : httpKinds(config);
    let lastError: unknown;
    let lastLink: Link | undefined;
    try {
      await this.start.oauth?.prepare();
    } catch (error) {
      throw this.failed(new ServerUnavailableError(`server "${this.name}" cannot start: ${(error as Error).message}`));
    }
    for (let i = 0, signedIn = false; i < kinds.length; i++) {
      const kind = kinds[i]!;
      if (this.closed) break;
      const link = this.newLink(config, kind);
      lastLink = link;
      this.attempt = link;
      this.start.oauth?.beginAttempt();
      try {
        await connectLink(link, this.timeouts.connectMs);
      } catch (error) {
        lastError = link.state.oversize ? new ProxyLimitError(oversizeReason(this.limits.maxResultBytes)) : error;
        await link.client.close().catch(() => undefined);
        const flowFailure = this.start.oauth?.flowFailure(error);
        if (flowFailure) throw this.failed(new ServerUnavailableError(this.voice.redact(flowFailure)));
        // A 401 that began a sign-in: the browser step is waited for, then the same transport tried again.
        if (this.start.oauth && ServerOAuth.isSignInError(error)) {
          const failure = await this.signIn(this.start.oauth, signedIn, error);
          // Said in the sign-in's own words (the URL to open, or why it failed), not as a start failure.
          if (failure && this.closed) break;
          if (failure) throw this.failed(failure);
          signedIn = true;
          i--;
        }
        continue;
      } finally {
        this.attempt = undefined;
      }
      if (this.closed) {
        // Closed while it started: close() may have missed it.
        await link.client.close().catch(() => undefined);
        break;
      }
      link.client.onclose = () => this.onClosed(link);
      this.link = link;
      this.listed = false;
      this.catalog.setState(this.name, 'running');
      this.catalog.setInstructions(this.name, link.client.getInstructions());
      this.log(`server ${this.name}: connected (${kind})`);
      return link;
    }
    // Closed while starting (shut down, or consent revoked): not a failure of the server.
    if (this.closed) throw new ServerUnavailableError(`server "${this.name}" is shut down`);
    // Let the last of a dying process's stderr arrive before quoting it.
    if (isStdio(config)) await new Promise((resolve) => setTimeout(resolve, 50));
    throw this.failed(this.voice.startError(lastError, lastLink?.state.exit, isStdio(config) ? config.command : undefined));
  }

  /** Waits for the sign-in a 401 began (off the connect timeout); why it failed, or undefined once signed in. */
  private async signIn(oauth: ServerOAuth, again: boolean, error: unknown): Promise<ServerUnavailableError | undefined> {
    const message = oauth.message();
    if (again || !message)
      return new ServerUnavailableError(
        message ?? `server "${this.name}" asks for a sign-in that could not start: ${(error as Error).message}`,
      );
    this.catalog.setState(this.name, 'starting', message);
    try {
      await oauth.waitForSignIn();
      return undefined;
    } catch (error) {
      return new ServerUnavailableError(`server "${this.name}": ${(error as Error).message}`);
    }
  }

  /** Whether `error` is the server asking for a sign-in that is now waiting for the person. */
  private signInBegun(error: unknown): boolean {
    return ServerOAuth.isSignInError(error) && this.start.oauth?.signingIn === true;
  }

  /**
   * Waits for the sign-in in progress (bounded by its own timeout; off the run's clock with
   * `untimed`, as at start); throws, in words for the model, when it fails or the run stops.
   */
  private async awaitSignIn(signal?: AbortSignal, untimed?: RunCall['untimed']): Promise<void> {
    const oauth = this.start.oauth;
    if (!oauth) return;
    let done = oauth.waitForSignIn();
    if (signal) done = stoppedBy(done, signal);
    try {
      await (untimed ? untimed(done) : done);
    } catch (error) {
      throw new ServerUnavailableError(`server "${this.name}": ${(error as Error).message}`);
    }
  }

  /** A client and guarded transport for one attempt to start the server. */
  private newLink(config: ServerConfig, kind: 'stdio' | 'streamable' | 'sse'): Link {
    if (isStdio(config)) this.voice.stdioStarted();
    return openLink(config, kind, {
      name: this.name,
      limits: this.limits,
      env: this.start.env,
      oauth: this.start.oauth,
      relay: this.relay,
      callsInFlight: () => this.callsInFlight(),
      onDropped: (total) => this.dropNotice.dropped(total),
      onStderr: (chunk) => this.voice.stderr(chunk),
      onToolsChanged: (link) => this.relister.changed(link),
      onLog: (link, message) => this.onServerLog(link, message),
      onOtherChanged: (link, kind) => this.onOtherListChanged(link, kind),
    });
  }

  /** Records a failed start (state, log, backoff) and returns the error to throw. */
  private failed(error: ServerUnavailableError): ServerUnavailableError {
    this.failures++;
    this.retryAt = Date.now() + Math.min(MAX_BACKOFF_MS, 500 * 2 ** (this.failures - 1));
    this.lastError = error.message;
    this.catalog.setState(this.name, 'error', error.message, error.detail);
    this.log(error.detail);
    return error;
  }

  private detail(text: string): string {
    return this.voice.detail(text);
  }

  private onClosed(link: Link): void {
    const { state } = link;
    // Set before the SDK fails the pending requests, which explain() then words with it.
    state.reason = state.oversize
      ? oversizeReason(this.limits.maxResultBytes)
      : state.exit
        ? exitText(state.exit)
        : 'its connection closed';
    if (this.link !== link) return;
    this.link = undefined;
    this.relister.cancel();
    if (this.closed) return;
    // A crash: the next use restarts it, at once the first time, then with growing backoff.
    this.failures++;
    this.retryAt = this.failures <= 1 ? 0 : Date.now() + Math.min(MAX_BACKOFF_MS, 500 * 2 ** (this.failures - 2));
    this.lastError = `server "${this.name}" stopped: ${state.reason}${state.oversize ? '' : this.voice.seeLog()}`;
    const detail = this.detail(`server "${this.name}" stopped: ${state.reason}${this.voice.stderrNote()}`);
    this.catalog.setState(this.name, 'error', this.lastError, detail);
    this.log(detail);
  }

  /** Relists on a change (see relister.ts); a failure is logged. */
  private async relist(link: Link): Promise<void> {
    try {
      await this.refreshTools(link);
    } catch (error) {
      if (this.closed || this.link !== link) return;
      this.log(`server ${this.name}: relisting tools failed: ${error instanceof ServerUnavailableError ? error.detail : String(error)}`);
    }
  }

  /** A change of the server's resources or prompts: passed on (the bridge re-exposes them). */
  private onOtherListChanged(link: Link, kind: 'resources' | 'prompts'): void {
    if (this.link !== link || this.closed) return;
    this.listChanged?.(kind);
  }

  /** Relays a log message of the server, rate-limited (server-notices.ts). */
  private onServerLog(link: Link, message: ServerLogMessage): void {
    if (this.link !== link && this.attempt !== link) return;
    if (!this.serverLog) return;
    this.logLimiter.pass(message, this.serverLog);
  }

  /** The first listing: a sign-in the server asks for (401, or 403 for a wider scope) is waited for, then it lists once more. */
  private async listTools(link: Link): Promise<void> {
    try {
      await this.refreshTools(link, true);
    } catch (error) {
      if (!this.signInBegun(error)) throw error;
      // The caller's wait (hub.listTools) is off the run's clock and stopped by its signal.
      await this.awaitSignIn();
      await this.refreshTools(link);
    }
  }

  /** `signIn`: an error that began a sign-in is thrown as it is (listTools waits for it), not explained. */
  private async refreshTools(link: Link, signIn = false): Promise<void> {
    const listed = await readToolList(
      async (cursor) => {
        try {
          return await link.client.listTools(cursor ? { cursor } : undefined, { timeout: this.timeouts.listMs });
        } catch (error) {
          if (signIn && this.signInBegun(error)) throw error;
          throw this.explain(error, 'listing tools', link);
        }
      },
      {
        maxTools: this.limits.maxToolsPerServer,
        maxBytes: this.limits.maxToolListBytes,
        maxToolBytes: this.limits.maxToolSchemaBytes,
        maxPages: MAX_PAGES,
      },
    );
    const invalid = listed.tools.filter((t) => !listedToolSchema.safeParse(t).success).length;
    const notes = [
      ...listed.notes,
      ...(invalid > 0 ? [`${invalid} ${invalid === 1 ? 'tool was' : 'tools were'} left out for not being valid tool descriptions`] : []),
    ];
    const warning = notes.join('; ');
    this.catalog.setTools(this.name, listed.tools, warning || undefined);
    this.listed = true;
    if (warning && warning !== this.lastWarning) {
      const names = listed.oversized.length > 0 ? ` (left out for size: ${listed.oversized.join(', ')})` : '';
      this.log(this.detail(`server ${this.name}: tool list cut: ${warning}${names}`));
    }
    this.lastWarning = warning;
  }

  private explain(error: unknown, doing: string, link: Link): Error {
    return this.voice.explain(error, doing, link.state);
  }
}

/** `work`, or a rejection once `signal` aborts (the work itself goes on). */
function stoppedBy<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(new Error('the run stopped while waiting for the sign-in'));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('the run stopped while waiting for the sign-in'));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
