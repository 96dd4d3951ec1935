// SDK transports for a proxied server's config: stdio (a child process with only the safe
// default environment, the proxy and certificate settings, and the server's own env) or HTTP
// (Streamable HTTP, SSE as fallback).
import type { ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { auth, extractWWWAuthenticateParams, UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { DEFAULT_INHERITED_ENV_VARS, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { HttpServerConfig, ServerConfig, StdioServerConfig } from '../../config/schema.ts';

export function isStdio(config: ServerConfig): config is StdioServerConfig {
  return 'command' in config;
}

// Recognising entries that start this bridge lives with the nesting guard.
export { startsThisBridge } from './self-proxy.ts';

/**
 * Host variables a stdio server inherits besides the SDK's defaults (HOME, PATH... or the
 * Windows set): proxy and certificate settings. Without them `npx -y some-server`, and servers
 * that call out, hang or fail behind a corporate proxy or a private CA. Nothing else of the
 * bridge's environment is passed on: it may hold other programs' secrets. NODE_OPTIONS stays
 * out too, as it can load code into every Node server.
 */
export const INHERITED_NETWORK_ENV = [
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'all_proxy',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'REQUESTS_CA_BUNDLE',
  'CURL_CA_BUNDLE',
] as const;

/** A stdio server's environment: the inherited variables that are set, then its own env. */
export function serverEnvironment(own: Record<string, string>, host: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of [...DEFAULT_INHERITED_ENV_VARS, ...INHERITED_NETWORK_ENV]) {
    const value = host[key];
    // Exported shell functions ("() {...}") are skipped, as the SDK does.
    if (value === undefined || value.startsWith('()')) continue;
    // Windows names ignore case: there, http_proxy and HTTP_PROXY are one variable.
    if (process.platform === 'win32' && Object.keys(env).some((k) => k.toLowerCase() === key.toLowerCase())) continue;
    env[key] = value;
  }
  return { ...env, ...own };
}

/**
 * `maxBufferSize` caps the bytes the SDK buffers of one unfinished message (plus at most one
 * read from the pipe): over it, the transport reports an error and closes.
 */
export function stdioTransport(
  config: StdioServerConfig,
  extraEnv: Record<string, string> = {},
  maxBufferSize?: number,
): StdioClientTransport {
  return new StdioClientTransport({
    command: config.command,
    args: config.args,
    env: serverEnvironment({ ...config.env, ...extraEnv }),
    ...(config.cwd ? { cwd: config.cwd } : {}),
    stderr: 'pipe',
    ...(maxBufferSize ? { maxBufferSize } : {}),
  });
}

/** The SDK's stdio error for a message over `maxBufferSize`. */
export function isStdioOversize(error: Error): boolean {
  return error.message.startsWith('ReadBuffer exceeded maximum size');
}

/**
 * The child process of a started stdio transport. The SDK keeps it private; the bridge needs it
 * for the exit code (said when the server fails) and to pause its stdout (during a flood).
 * Undefined if a version of the SDK keeps it elsewhere: both then degrade, nothing breaks.
 */
export function childOf(transport: StdioClientTransport): ChildProcess | undefined {
  const child = (transport as unknown as { _process?: unknown })._process;
  return child instanceof EventEmitter && 'stdout' in child ? (child as ChildProcess) : undefined;
}

/** The MCP authorization flow of a server (oauth/server-oauth.ts): its provider, and its wrapper of requests (refreshes, step-up). */
export interface HttpAuth {
  provider: OAuthClientProvider;
  wrap(f: FetchLike): FetchLike;
}

/** `fetch` (when given) wraps every request, to cap and pace response bodies; `oauth` answers a 401. */
export function httpTransport(
  config: HttpServerConfig,
  kind: 'streamable' | 'sse',
  extraHeaders: Record<string, string> = {},
  wrap: (f: FetchLike) => FetchLike = (f) => f,
  oauth?: HttpAuth,
): Transport {
  const url = new URL(config.url);
  const headers = { ...config.headers, ...extraHeaders };
  const plain: FetchLike = (u, init) => fetch(u, init);
  const base = oauth ? oauth.wrap(plain) : plain;
  const auth = oauth ? { authProvider: oauth.provider } : {};
  return kind === 'sse'
    ? new SSEClientTransport(url, {
        ...auth,
        requestInit: { headers },
        fetch: oauth ? sseStepUp(wrap(base), url, oauth.provider) : wrap(base),
        eventSourceInit: {
          // The SDK's headers (its Authorization among them) come as a Headers object: kept, the configured ones added.
          fetch: wrap((u, init) => fetch(u, { ...init, headers: withHeaders(init?.headers, headers) })),
        },
      })
    : new StreamableHTTPClientTransport(url, { ...auth, requestInit: { headers }, fetch: wrap(base) });
}

/** `given` (a Headers object, a list of pairs or a record) with `extra` set over it. */
function withHeaders(given: HeadersInit | undefined, extra: Record<string, string>): Headers {
  const merged = new Headers(given);
  for (const [name, value] of Object.entries(extra)) merged.set(name, value);
  return merged;
}

/**
 * The SSE transport's POSTs (calls, listings) with a 403 insufficient_scope handled as the
 * Streamable HTTP transport does (the SDK's SSE transport only answers a 401): the SDK's auth()
 * with the scope the server names begins a sign-in for it (the provider holds its refresh token
 * back, server-oauth.ts), and the POST fails with UnauthorizedError, which the connection waits
 * on before making the call once more. Should auth() succeed without a sign-in, the POST is made
 * once more, and a second 403 goes to the transport as it is.
 */
function sseStepUp(post: FetchLike, serverUrl: URL, provider: OAuthClientProvider): FetchLike {
  return async (url, init) => {
    const response = await post(url, init);
    if (response.status !== 403) return response;
    const { error, scope, resourceMetadataUrl } = extractWWWAuthenticateParams(response);
    if (error !== 'insufficient_scope') return response;
    await response.body?.cancel();
    const result = await auth(provider, { serverUrl, scope, resourceMetadataUrl, fetchFn: post });
    if (result !== 'AUTHORIZED') throw new UnauthorizedError();
    return post(url, init);
  };
}

/** Which HTTP transport to try first; `sse` pins the legacy one. */
export function httpKinds(config: HttpServerConfig): Array<'streamable' | 'sse'> {
  return config.type === 'sse' ? ['sse'] : ['streamable', 'sse'];
}
