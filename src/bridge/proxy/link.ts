// One started server process or HTTP session of a proxied server: its SDK client over a guarded
// transport (stdio, Streamable HTTP or SSE) with the caps on what the server sends, the relay of
// its requests to the bridge's client, and its notifications handed to the connection. Also how
// a link connects (bounded by the connect timeout) and ends.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  type ClientCapabilities,
  LoggingMessageNotificationSchema,
  type LoggingMessageNotification,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { ServerConfig } from '../../config/schema.ts';
import { secondsText } from '../../shared/durations.ts';
import { StartTimeout, type ExitInfo } from './failures.ts';
import { Flow, GuardedTransport } from './guarded-transport.ts';
import { limitedFetch } from './limited-fetch.ts';
import type { ProxyLimits } from './limits.ts';
import type { ServerOAuth } from './oauth/server-oauth.ts';
import { installRelay, type ClientRelay } from './relay.ts';
import { childOf, httpTransport, isStdio, isStdioOversize, stdioTransport } from './transports.ts';

/** What became of one started server process or HTTP session. */
export interface LinkState {
  exit?: ExitInfo;
  /** The server sent a message over the size cap: the bridge closed the connection. */
  oversize: boolean;
  /** Why the connection closed, in our words (set when it closes). */
  reason?: string;
  /** Ends a stdio server's process at once. */
  kill?: () => void;
  /** Ends a Streamable HTTP session (DELETE), when the server gave one. */
  terminate?: () => Promise<void>;
}

/** One started server process or HTTP session: its client, transport and state. */
export interface Link {
  client: Client;
  transport: GuardedTransport;
  state: LinkState;
  /** What this link's client declared to the server (roots, elicitation, sampling). */
  declared: ClientCapabilities;
}

/** The bridge's client, for the requests proxied servers send theirs (see relay.ts). */
export interface RelaySetting {
  relay: ClientRelay;
  /** proxy.maxRelayBytes */
  maxBytes: number;
}

/** A log message a proxied server sent (notifications/message), for the bridge to relay. */
export type ServerLogMessage = LoggingMessageNotification['params'];

/** What a link needs of its connection. */
export interface LinkOptions {
  name: string;
  limits: ProxyLimits;
  /** Added to a stdio server's environment last. */
  env: Record<string, string> | undefined;
  oauth: ServerOAuth | undefined;
  relay: RelaySetting | undefined;
  /** The tool calls in flight, for the relay (whose runs to pause): what installRelay takes. */
  callsInFlight: Parameters<typeof installRelay>[4];
  /** Notifications dropped over the rate cap so far. */
  onDropped: (total: number) => void;
  /** A chunk of a stdio server's stderr. */
  onStderr: (chunk: Buffer) => void;
  onToolsChanged: (link: Link) => void;
  onLog: (link: Link, message: ServerLogMessage) => void;
  onOtherChanged: (link: Link, kind: 'resources' | 'prompts') => void;
}

/** The longest the bridge waits for a session's DELETE when it closes a server. */
const TERMINATE_MS = 2000;

/** A client and guarded transport for one attempt to start the server. */
export function openLink(config: ServerConfig, kind: 'stdio' | 'streamable' | 'sse', options: LinkOptions): Link {
  const { limits } = options;
  const flow = new Flow();
  const state: LinkState = { oversize: false };
  const guard = {
    maxPerSecond: limits.maxNotificationsPerSecond,
    flow,
    onDropped: (total: number) => options.onDropped(total),
    onOversize: () => {
      state.oversize = true;
      // It may still be writing the rest: no need to wait for it to see its stdin close.
      state.kill?.();
    },
  };
  let transport: GuardedTransport;
  if (isStdio(config)) {
    const inner = stdioTransport(config, options.env, limits.maxResultBytes);
    inner.stderr?.on('data', (chunk: Buffer) => options.onStderr(chunk));
    transport = new GuardedTransport(inner, {
      ...guard,
      isOversize: isStdioOversize,
      onStarted: () => watchProcess(inner, state, flow),
    });
  } else {
    const inner: Transport = httpTransport(
      config,
      kind === 'sse' ? 'sse' : 'streamable',
      {},
      (base) =>
        limitedFetch(base, {
          maxBytes: limits.maxResultBytes,
          flow,
          onOversize: () => {
            state.oversize = true;
            transport.end();
          },
        }),
      options.oauth,
    );
    transport = new GuardedTransport(inner, guard);
    if (inner instanceof StreamableHTTPClientTransport) state.terminate = () => inner.terminateSession();
  }
  const { relay } = options;
  const declared = relay?.relay.upstreamCapabilities() ?? {};
  const client = new Client({ name: 'code-execution-mode', version: '0.1.0' }, { capabilities: declared });
  const link: Link = { client, transport, state, declared };
  if (relay) installRelay(client, options.name, relay.relay, declared, options.callsInFlight, relay.maxBytes);
  // Our own handler (not the SDK's listChanged option, whose debounce a steady flood never lets fire).
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => options.onToolsChanged(link));
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => options.onLog(link, notification.params));
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => options.onOtherChanged(link, 'resources'));
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => options.onOtherChanged(link, 'prompts'));
  return link;
}

/** The stdio process: its exit (said when it fails) and its stdout (paused in a flood). */
function watchProcess(transport: StdioClientTransport, state: LinkState, flow: Flow): void {
  const child = childOf(transport);
  if (!child) return;
  if (child.stdout) flow.attach(child.stdout);
  child.once('exit', (code, signal) => (state.exit = { code, signal }));
  state.kill = () => void child.kill('SIGTERM');
}

/** Connects a link's client (initialize), within `ms` also if the transport's start hangs. */
export async function connectLink(link: Link, ms: number): Promise<void> {
  await withTimeout(link.client.connect(link.transport, { timeout: ms }), ms);
}

/** Ends a link: its HTTP session (DELETE) first when it still stands, briefly, then its client. */
export async function endLink(link: Link | undefined): Promise<void> {
  // A server that does not answer the DELETE delays no one.
  if (link?.state.terminate && !link.state.reason) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      link.state.terminate().catch(() => undefined),
      new Promise((resolve) => (timer = setTimeout(resolve, TERMINATE_MS))),
    ]);
    clearTimeout(timer);
  }
  await link?.client.close().catch(() => undefined);
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new StartTimeout(`did not start within ${secondsText(ms)}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
