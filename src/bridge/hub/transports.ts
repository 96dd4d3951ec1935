// SDK transports for a proxied server's config: stdio (a child process with only the safe
// default environment, the proxy and certificate settings, and the server's own env) or HTTP
// (Streamable HTTP, SSE as fallback).
import { basename } from 'node:path';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { DEFAULT_INHERITED_ENV_VARS, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { HttpServerConfig, ServerConfig, StdioServerConfig } from '../../config/schema.ts';

export function isStdio(config: ServerConfig): config is StdioServerConfig {
  return 'command' in config;
}

export const BRIDGE_COMMAND = 'code-execution-mode';

/**
 * Whether a stdio entry would start this bridge again (directly, through npx, or through the
 * bundled script), which would recurse. Such entries are refused unless `allowSelfProxy`.
 */
export function startsThisBridge(config: ServerConfig, ownScript = process.argv[1]): boolean {
  if (!isStdio(config)) return false;
  const words = [config.command, ...config.args].map((w) => basename(w).replace(/@[^@/]*$/, ''));
  if (words.includes(BRIDGE_COMMAND)) return true;
  return ownScript !== undefined && [config.command, ...config.args].includes(ownScript);
}

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

export function stdioTransport(config: StdioServerConfig, extraEnv: Record<string, string> = {}): StdioClientTransport {
  return new StdioClientTransport({
    command: config.command,
    args: config.args,
    env: serverEnvironment({ ...config.env, ...extraEnv }),
    ...(config.cwd ? { cwd: config.cwd } : {}),
    stderr: 'pipe',
  });
}

export function httpTransport(config: HttpServerConfig, kind: 'streamable' | 'sse', extraHeaders: Record<string, string> = {}): Transport {
  const url = new URL(config.url);
  const headers = { ...config.headers, ...extraHeaders };
  return kind === 'sse'
    ? new SSEClientTransport(url, { requestInit: { headers }, eventSourceInit: { fetch: (u, init) => fetch(u, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }) } })
    : new StreamableHTTPClientTransport(url, { requestInit: { headers } });
}

/** Which HTTP transport to try first; `sse` pins the legacy one. */
export function httpKinds(config: HttpServerConfig): Array<'streamable' | 'sse'> {
  return config.type === 'sse' ? ['sse'] : ['streamable', 'sse'];
}
