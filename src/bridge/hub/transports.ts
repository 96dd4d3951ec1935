// SDK transports for a proxied server's config: stdio (a child process with only the safe
// default environment plus the server's own env) or HTTP (Streamable HTTP, SSE as fallback).
import { basename } from 'node:path';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
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

export function stdioTransport(config: StdioServerConfig, extraEnv: Record<string, string> = {}): StdioClientTransport {
  return new StdioClientTransport({
    command: config.command,
    args: config.args,
    env: { ...getDefaultEnvironment(), ...config.env, ...extraEnv },
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
