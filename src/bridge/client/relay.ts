// The bridge's own MCP client as proxied servers reach it (see proxy/relay.ts): roots (the
// client's, or the configured ones when it has none), elicitation (form and URL) and sampling,
// each asked with the relay timeout and recorded in the run log, and cancelled at the client when
// the server cancels it. A form's answer gets the form's defaults for fields the client left out.
// What is passed on is rebuilt from the checked request, not forwarded as sent: the question names
// the server that asks, and nothing of the upstream's own bookkeeping (_meta, task) reaches the
// bridge's client.
import { pathToFileURL } from 'node:url';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  ElicitResultSchema,
  ErrorCode,
  McpError,
  type ClientCapabilities,
  type CreateMessageRequest,
  type ElicitRequest,
  type ElicitRequestFormParams,
  type ElicitRequestURLParams,
  type ElicitResult,
  type Root,
} from '@modelcontextprotocol/sdk/types.js';
import { proxyConfigSchema } from '../../config/schema.ts';
import type { ClientRelay, RelayContext, RelayedMethod } from '../proxy/relay.ts';
import { openableSignInUrl } from '../../state/sign-in-notices.ts';
import { answerWithDefaults } from './elicitation-defaults.ts';
import { confirmationWordingReason, reservedFieldReason } from './relay-imitation.ts';
import { RelayAdmission, type RelayLimits } from './relay-limits.ts';
import { RefusalGroups } from './relay-refusals.ts';
import { realClock, type Clock } from '../../shared/clock.ts';
import type { RelayEvent, RunLog } from '../../state/run-log/writer.ts';
import { lines, oneLine, prefixedMessage } from '../../shared/shown-text.ts';

/** URL elicitations remembered for their completion notice; the oldest are forgotten first. */
const MAX_OPEN_URL_ELICITATIONS = 256;

/** Answered roots/list requests of one server are recorded at most this often. */
export const ROOTS_RECORD_MS = 10_000;

/** Roots passed on from the bridge's client; more are left out. */
const MAX_RELAYED_ROOTS = 256;

/** Characters of a relayed question's first line (after the server's name), of all of it, of a field's title and description. */
const MAX_FIRST_LINE_CHARS = 200;
const MAX_MESSAGE_CHARS = 2000;
export const MAX_TITLE_CHARS = 100;
const MAX_DESCRIPTION_CHARS = 500;

export interface ClientRelayOptions {
  /** Folders or file:// URIs from the configuration, for a client without roots. */
  roots: readonly string[];
  timeoutMs: number;
  log?: (message: string) => void;
  /**
   * Wait for the client's initialize before proxied servers start (served over stdio), at most
   * this long; undefined: no client will come (a command-line run), start at once.
   */
  awaitClientMs?: number | undefined;
  /** What the wait for the client, the refusal windows and the roots/list records read the time from (tests drive it). */
  clock?: Clock;
}

/** A configured root as MCP has it: a file:// URI, named by its last part. */
export function configuredRoot(root: string): Root {
  const uri = root.startsWith('file://') ? root : pathToFileURL(root).href;
  const name = decodeURIComponent(uri.replace(/\/+$/, '').split('/').pop() ?? '') || uri;
  return { uri, name };
}

export class BridgeClientRelay implements ClientRelay {
  private readonly server: () => Server;
  private readonly options: ClientRelayOptions;
  private readonly configRoots: Root[];
  private initialized = false;
  private readonly waiters: (() => void)[] = [];
  /** `server \0 elicitationId` of URL elicitations relayed: only that server may say one is complete. */
  private readonly openUrls = new Set<string>();
  /** URL elicitations being asked now, by server and elicitationId. */
  private readonly pendingUrls = new Map<string, Promise<ElicitResult>>();
  /** When each server's last answered roots/list was recorded. */
  private readonly rootsRecorded = new Map<string, number>();
  /** Where relayed and refused requests are recorded (set once the run log exists). */
  runLog: RunLog | undefined;
  private readonly admission: RelayAdmission;
  private readonly refusals: RefusalGroups;

  constructor(server: () => Server, options: ClientRelayOptions) {
    this.server = server;
    this.options = options;
    this.configRoots = options.roots.map(configuredRoot);
    this.admission = new RelayAdmission(proxyConfigSchema.parse({}));
    this.refusals = new RefusalGroups(
      (event) => {
        this.options.log?.(`server ${event.server}: ${event.method} refused: ${event.error ?? ''}`);
        this.write(event);
      },
      undefined,
      options.clock,
    );
  }

  /** The caps on questions pending per server and relayed per run (proxy settings). */
  limit(limits: RelayLimits): void {
    this.admission.setLimits(limits);
  }

  /** The bridge's client finished initializing: its capabilities are known. */
  markInitialized(): void {
    this.initialized = true;
    for (const wake of this.waiters.splice(0)) wake();
  }

  ready(): Promise<void> {
    const wait = this.options.awaitClientMs;
    if (this.initialized || wait === undefined) return Promise.resolve();
    const clock = this.options.clock ?? realClock;
    return new Promise((resolve) => {
      const timer = clock.setTimeout(() => {
        this.options.log?.(
          `the bridge's client did not initialize within ${wait / 1000} s; proxied servers start without its capabilities`,
        );
        resolve();
      }, wait);
      this.waiters.push(() => {
        clock.clearTimeout(timer);
        resolve();
      });
    });
  }

  private client(): ClientCapabilities {
    return this.server().getClientCapabilities() ?? {};
  }

  upstreamCapabilities(): ClientCapabilities {
    const own = this.client();
    const capabilities: ClientCapabilities = {};
    if (own.roots || this.configRoots.length > 0) capabilities.roots = { listChanged: true };
    if (own.elicitation) {
      const { form, url } = modes(own);
      capabilities.elicitation = { ...(form ? { form: {} } : {}), ...(url ? { url: {} } : {}) };
    }
    if (own.sampling) capabilities.sampling = own.sampling.tools ? { tools: {} } : {};
    return capabilities;
  }

  async listRoots(context: RelayContext) {
    if (!this.client().roots) {
      this.record('roots/list', context, 'answered', 0);
      return { roots: this.configRoots };
    }
    return this.timed('roots/list', context, async (options) => {
      const { roots } = await this.server().listRoots(undefined, options);
      // A client with no folders open (VS Code without a workspace) has none: the configured ones stand in.
      if (roots.length === 0) return { roots: this.configRoots };
      return { roots: roots.slice(0, MAX_RELAYED_ROOTS).map(({ uri, name }) => ({ uri, ...(name !== undefined ? { name } : {}) })) };
    });
  }

  async elicit(params: ElicitRequest['params'], context: RelayContext): Promise<ElicitResult> {
    const { form, url } = modes(this.client());
    if (params.mode === 'url') {
      if (!url) this.refuse('elicitation/create', context, "the bridge's client does not support URL elicitation");
      if (!openableSignInUrl(params.url)) this.refuse('elicitation/create', context, URL_RULE);
      this.refuseImitation('elicitation/create', context, params.message);
      return this.askUrl('elicitation/create', params, context);
    }
    if (!form) this.refuse('elicitation/create', context, "the bridge's client does not support form elicitation");
    // A server's form may not pass for the bridge's confirmation: neither its field names nor its wording.
    const reserved = reservedFieldReason(Object.keys(params.requestedSchema.properties));
    if (reserved) this.refuse('elicitation/create', context, reserved);
    this.refuseImitation('elicitation/create', context, params.message, params.requestedSchema);
    const asked: ElicitRequestFormParams = {
      mode: 'form',
      message: relayedMessage(context.server, params.message),
      requestedSchema: { ...params.requestedSchema, properties: relayedFields(context.server, params.requestedSchema.properties) },
    };
    return this.admitted('elicitation/create', context, () =>
      this.timed(
        'elicitation/create',
        context,
        async (options) => {
          // Asked as a plain request: the form's defaults go into the answer before it is checked.
          const answer = await this.server().request({ method: 'elicitation/create', params: asked }, ElicitResultSchema, options);
          return answerWithDefaults(params.requestedSchema, answer);
        },
        (r) => r.action,
      ),
    );
  }

  /** A URL elicitation a proxied tool call needs (-32042), asked on the call's behalf. */
  async elicitUrl(params: ElicitRequestURLParams, context: RelayContext): Promise<ElicitResult> {
    if (!modes(this.client()).url)
      this.refuse('elicitation/create (url, for a tool call)', context, "the bridge's client does not support URL elicitation");
    if (!openableSignInUrl(params.url)) this.refuse('elicitation/create (url, for a tool call)', context, URL_RULE);
    this.refuseImitation('elicitation/create (url, for a tool call)', context, params.message);
    return this.askUrl('elicitation/create (url, for a tool call)', params, context);
  }

  /** Refuses a question that uses the wording of the bridge's own confirmation. */
  private refuseImitation(method: RelayedMethod, context: RelayContext, message: string, requestedSchema?: unknown): void {
    const why = confirmationWordingReason(message, requestedSchema);
    if (why) this.refuse(method, context, why);
  }

  private askUrl(method: RelayedMethod, params: ElicitRequestURLParams, context: RelayContext): Promise<ElicitResult> {
    // The same elicitation asked again while it is open (a resent request) is one question to the user.
    const key = `${context.server}\0${params.elicitationId}`;
    const open = this.pendingUrls.get(key);
    if (open) return open;
    const asked: ElicitRequestURLParams = {
      mode: 'url',
      message: relayedMessage(context.server, params.message),
      url: params.url,
      elicitationId: params.elicitationId,
    };
    const pending = this.admitted(method, context, () => {
      this.openUrls.delete(key);
      this.openUrls.add(key);
      if (this.openUrls.size > MAX_OPEN_URL_ELICITATIONS) this.openUrls.delete(this.openUrls.values().next().value!);
      return this.timed(
        method,
        context,
        (options) => this.server().elicitInput(asked, options),
        (r) => r.action,
      );
    }).finally(() => this.pendingUrls.delete(key));
    this.pendingUrls.set(key, pending);
    return pending;
  }

  elicitationComplete(server: string, elicitationId: string): void {
    const key = `${server}\0${elicitationId}`;
    if (!this.openUrls.has(key)) return;
    this.openUrls.delete(key);
    if (!modes(this.client()).url) return;
    void this.server()
      .createElicitationCompletionNotifier(elicitationId)()
      .catch(() => undefined);
  }

  /** Whether URL elicitations can be asked of the bridge's client. */
  canElicitUrl(): boolean {
    return modes(this.client()).url;
  }

  async sample(params: CreateMessageRequest['params'], context: RelayContext) {
    const own = this.client();
    if (!own.sampling) this.refuse('sampling/createMessage', context, "the bridge's client does not support sampling");
    const { task: _task, _meta: _m, includeContext: _context, tools, toolChoice, ...rest } = params;
    // includeContext would be the bridge's conversation, not the server's: never asked for.
    const withTools = own.sampling?.tools && tools ? { tools, ...(toolChoice ? { toolChoice } : {}) } : {};
    return this.admitted('sampling/createMessage', context, () =>
      this.timed('sampling/createMessage', context, (options) => this.server().createMessage({ ...rest, ...withTools }, options)),
    );
  }

  refused(method: RelayedMethod, context: Omit<RelayContext, 'signal'>, why: string): void {
    // Grouped per server and second: a flood of refusals must not push real records out of the log.
    this.refusals.refused({ server: context.server, method, runs: context.runs, outcome: 'refused', waitedMs: 0, error: why });
  }

  /** Asks only within the caps (pending per server, relayed per run); refused at once past them. */
  private async admitted<T>(method: RelayedMethod, context: RelayContext, ask: () => Promise<T>): Promise<T> {
    const place = this.admission.admit(context.server, context.runs);
    if ('refused' in place) this.refuse(method, context, place.refused);
    try {
      return await ask();
    } finally {
      place.release();
    }
  }

  private refuse(method: RelayedMethod, context: RelayContext, why: string): never {
    this.refused(method, context, why);
    throw new McpError(ErrorCode.InvalidRequest, why);
  }

  private async timed<T>(
    method: RelayedMethod,
    context: RelayContext,
    ask: (options: { timeout: number; signal: AbortSignal }) => Promise<T>,
    action?: (result: T) => string,
  ): Promise<T> {
    const started = performance.now();
    try {
      const result = await ask({ timeout: this.options.timeoutMs, signal: context.signal });
      this.record(method, context, 'answered', performance.now() - started, action?.(result));
      return result;
    } catch (error) {
      if (context.signal.aborted) {
        // The SDK has told the bridge's client (notifications/cancelled with the id it was asked with).
        this.record(method, context, 'cancelled', performance.now() - started, undefined, context.stopped?.() ?? 'cancelled');
        throw error;
      }
      const timedOut = error instanceof McpError && error.code === ErrorCode.RequestTimeout;
      const message = error instanceof Error ? error.message : String(error);
      this.record(
        method,
        context,
        timedOut ? 'timeout' : 'failed',
        performance.now() - started,
        undefined,
        timedOut ? `no answer within ${this.options.timeoutMs / 1000} s (proxy.relayTimeoutSeconds)` : message,
      );
      if (timedOut) throw new McpError(ErrorCode.RequestTimeout, `the user did not answer within ${this.options.timeoutMs / 1000} s`);
      throw error;
    }
  }

  private record(
    method: RelayedMethod,
    context: RelayContext,
    outcome: RelayEvent['outcome'],
    waitedMs: number,
    action?: string,
    error?: string,
  ): void {
    // A server may ask for the roots in a loop (and cancel each request), and each answer costs
    // nothing: recorded at most every ROOTS_RECORD_MS per server, so that it cannot push real
    // records out of the run log.
    if (method === 'roots/list' && (outcome === 'answered' || outcome === 'cancelled')) {
      const now = (this.options.clock ?? realClock).now();
      if (now - (this.rootsRecorded.get(context.server) ?? -Infinity) < ROOTS_RECORD_MS) return;
      this.rootsRecorded.set(context.server, now);
    }
    this.write({
      server: context.server,
      method,
      runs: context.runs,
      outcome,
      waitedMs,
      ...(action ? { action } : {}),
      ...(error ? { error } : {}),
    });
  }

  private write(event: RelayEvent): void {
    this.runLog?.relay(event);
  }
}

/** The elicitation modes a client declared (an empty object means form, as before modes existed). */
function modes(capabilities: ClientCapabilities): { form: boolean; url: boolean } {
  const elicitation = capabilities.elicitation;
  if (!elicitation) return { form: false, url: false };
  const url = elicitation.url !== undefined;
  return { form: elicitation.form !== undefined || !url, url };
}

/** URL elicitations follow the rule of sign-in URLs. */
const URL_RULE = 'the URL must be https (or http to this machine: 127.0.0.1, localhost, [::1]) and carry no user name or password';

/** A server's message as the question put to the user: the server named first, on the first line. */
function relayedMessage(server: string, message: string): string {
  return prefixedMessage(`MCP server "${server}" asks: `, message, MAX_FIRST_LINE_CHARS, MAX_MESSAGE_CHARS);
}

type FormFields = ElicitRequestFormParams['requestedSchema']['properties'];

/** A form's fields as shown: every title one line, capped, naming the server; option labels one line too. */
function relayedFields(server: string, properties: FormFields): FormFields {
  const label = (text: string) => oneLine(text, MAX_TITLE_CHARS);
  return Object.fromEntries(
    Object.entries(properties).map(([key, field]) => {
      const shown: Record<string, unknown> = { ...field, title: `[${server}] ${label(field.title ?? key)}` };
      if (field.description !== undefined) shown.description = lines(field.description, MAX_DESCRIPTION_CHARS);
      if ('oneOf' in field && Array.isArray(field.oneOf)) shown.oneOf = field.oneOf.map((o) => ({ ...o, title: label(o.title) }));
      if ('enumNames' in field && Array.isArray(field.enumNames)) shown.enumNames = field.enumNames.map(label);
      if ('items' in field && field.items && 'anyOf' in field.items && Array.isArray(field.items.anyOf)) {
        shown.items = { ...field.items, anyOf: field.items.anyOf.map((o) => ({ ...o, title: label(o.title) })) };
      }
      return [key, shown as FormFields[string]];
    }),
  );
}
