// Requests a proxied server sends its client (roots/list, elicitation/create,
// sampling/createMessage), relayed to the bridge's own client. The upstream SDK client declares
// only what the bridge's client declared; a request it did not declare gets a deliberate error
// (and the run log says what was refused). The server is untrusted: its requests are checked by
// the SDK's schemas (before these handlers run) and capped here; a run whose call of that
// server is in flight has its clock paused while the answer is awaited. A request the server
// cancels (notifications/cancelled) is cancelled at the bridge's client too.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CreateMessageRequestSchema,
  ElicitationCompleteNotificationSchema,
  ElicitRequestSchema,
  ErrorCode,
  ListRootsRequestSchema,
  McpError,
  type ClientCapabilities,
  type CreateMessageRequest,
  type CreateMessageResult,
  type CreateMessageResultWithTools,
  type ElicitRequest,
  type ElicitRequestURLParams,
  type ElicitResult,
  type ListRootsResult,
} from '@modelcontextprotocol/sdk/types.js';
import { jsonBytes } from './limits.ts';
import { sizeText } from '../../shared/byte-size.ts';
import { oneLine } from '../../shared/shown-text.ts';
import type { RelayLimits } from '../client/relay-limits.ts';
import type { RunCall } from '../run-call.ts';

const RELAYED_METHODS = ['roots/list', 'elicitation/create', 'sampling/createMessage'] as const;
export type RelayedMethod = (typeof RELAYED_METHODS)[number] | 'elicitation/create (url, for a tool call)';

/** Fields an elicitation form may ask for; a bigger form is refused. */
const MAX_ELICITATION_FIELDS = 32;

/** Characters of a server's reason for cancelling kept in the run log. */
export const MAX_REASON_CHARS = 200;

/** Who asks, for whom, and until when. */
export interface RelayContext {
  server: string;
  /** Runs with a call of this server in flight. */
  runs: RunCall['runId'][];
  /** Aborts the relayed request: the bridge's client is then told it is cancelled. */
  signal: AbortSignal;
  /** Why the signal aborted, for the run log ("cancelled by the server"). */
  stopped?: () => string;
}

/** The bridge's own client, as proxied servers reach it (see bridge/client/relay.ts). */
export interface ClientRelay {
  /** Resolves once the bridge's client has said what it supports (or waiting is pointless). */
  ready(): Promise<void>;
  /** What upstream clients declare: what the bridge's client declared (roots also from config). */
  upstreamCapabilities(): ClientCapabilities;
  listRoots(context: RelayContext): Promise<ListRootsResult>;
  elicit(params: ElicitRequest['params'], context: RelayContext): Promise<ElicitResult>;
  sample(params: CreateMessageRequest['params'], context: RelayContext): Promise<CreateMessageResult | CreateMessageResultWithTools>;
  /** Whether a URL elicitation can be asked (for a tool call that answered -32042). */
  canElicitUrl(): boolean;
  /** Asks the URL elicitation a tool call needs, on the call's behalf. */
  elicitUrl(params: ElicitRequestURLParams, context: RelayContext): Promise<ElicitResult>;
  /** The server says a URL elicitation it asked for is complete: passed on if it was relayed for it. */
  elicitationComplete(server: string, elicitationId: string): void;
  /** Records a request that was not relayed, and why. */
  refused(method: RelayedMethod, context: Omit<RelayContext, 'signal'>, why: string): void;
  /** The caps on elicitations and sampling: pending at once per server, relayed per run. */
  limit(limits: RelayLimits): void;
}

/** Installs the relay on one upstream client (before it connects). */
export function installRelay(
  client: Client,
  server: string,
  relay: ClientRelay,
  declared: ClientCapabilities,
  /** The runs of the tool calls in flight, one per call (a run with two calls is there twice). */
  calls: () => Iterable<RunCall>,
  maxBytes: number,
): void {
  const runsOf = (): { runs: string[]; pause: <T>(work: Promise<T>) => Promise<T> } => {
    const active = [...calls()];
    const runs = [...new Set(active.map((c) => c.runId))];
    // Every run waiting on this server stands still while its answer is awaited.
    const pause = <T>(work: Promise<T>): Promise<T> => active.reduce((w, c) => (c.untimed ? c.untimed(w) : w), work);
    return { runs, pause };
  };
  const refuse = (method: RelayedMethod, runs: string[], why: string, code: number = ErrorCode.InvalidRequest): never => {
    relay.refused(method, { server, runs }, why);
    throw new McpError(code, why);
  };
  // The handler's signal aborts when the server cancels its request (notifications/cancelled) or
  // its connection closes (the SDK has let go of the transport by the time the relay records it).
  const asked = (runs: string[], signal: AbortSignal): RelayContext => ({
    server,
    runs,
    signal,
    stopped: () => {
      const reason: unknown = signal.reason;
      if (!client.transport) return "the server's connection closed";
      return typeof reason === 'string' && reason
        ? `cancelled by the server: ${oneLine(reason, MAX_REASON_CHARS)}`
        : 'cancelled by the server';
    },
  });
  const checkSize = (method: RelayedMethod, params: unknown, runs: string[]) => {
    const bytes = jsonBytes(params ?? {});
    if (bytes > maxBytes)
      refuse(
        method,
        runs,
        `the request is ${sizeText(bytes)} as JSON, over the ${sizeText(maxBytes)} the bridge relays (proxy.maxRelayBytes)`,
        ErrorCode.InvalidParams,
      );
  };
  if (declared.roots) {
    client.setRequestHandler(ListRootsRequestSchema, async (_request, extra) => {
      const { runs, pause } = runsOf();
      return pause(relay.listRoots(asked(runs, extra.signal)));
    });
  }
  if (declared.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
      const { runs, pause } = runsOf();
      checkSize('elicitation/create', request.params, runs);
      const params = request.params;
      if (params.mode !== 'url') {
        const fields = Object.keys(params.requestedSchema.properties).length;
        if (fields > MAX_ELICITATION_FIELDS)
          refuse(
            'elicitation/create',
            runs,
            `the form asks for ${fields} fields, over the ${MAX_ELICITATION_FIELDS} the bridge relays`,
            ErrorCode.InvalidParams,
          );
      }
      return pause(relay.elicit(params, asked(runs, extra.signal)));
    });
  }
  if (declared.elicitation?.url) {
    client.setNotificationHandler(ElicitationCompleteNotificationSchema, (notification) =>
      relay.elicitationComplete(server, notification.params.elicitationId),
    );
  }
  if (declared.sampling) {
    client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
      const { runs, pause } = runsOf();
      checkSize('sampling/createMessage', request.params, runs);
      return pause(relay.sample(request.params, asked(runs, extra.signal)));
    });
  }
  // What the bridge's client did not declare: said and recorded, not a Method-not-found by accident.
  client.fallbackRequestHandler = (request) => {
    const method = RELAYED_METHODS.find((m) => m === request.method);
    if (!method) return Promise.reject(new McpError(ErrorCode.MethodNotFound, 'Method not found'));
    const capability = method === 'roots/list' ? 'roots' : method === 'elicitation/create' ? 'elicitation' : 'sampling';
    return Promise.resolve(
      refuse(
        method,
        runsOf().runs,
        `the client does not support ${capability}: the bridge's client (code-execution-mode relays to it) did not declare it`,
      ),
    );
  };
}
