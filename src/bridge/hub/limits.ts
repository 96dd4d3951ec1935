// The byte and rate caps on what proxied servers send and what sandboxed code sends them, and
// the error that names the cap that was hit. Servers are untrusted: without these, one of them
// could take the bridge's memory (a 300 MB result) or its CPU (a notification flood).
import type { ProxyConfig } from '../../config/schema.ts';

export type ProxyLimits = Pick<
  ProxyConfig,
  'maxResultBytes' | 'maxArgumentBytes' | 'maxToolsPerServer' | 'maxToolListBytes' | 'maxToolSchemaBytes' | 'maxNotificationsPerSecond'
>;

/** A cap was hit; the message names it (as its configuration key) and says what happened. */
export class ProxyLimitError extends Error {
  override readonly name = 'ProxyLimitError';
}

/** "4 MiB", "64 KiB", "2000 bytes", "1.3 MiB": caps (whole units or exact) and sizes in messages. */
export function formatBytes(bytes: number): string {
  const MiB = 1024 * 1024;
  if (bytes >= MiB && bytes % MiB === 0) return `${bytes / MiB} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0 && bytes < MiB) return `${bytes / 1024} KiB`;
  return bytes < MiB ? `${bytes} bytes` : `${(bytes / MiB).toFixed(1)} MiB`;
}

/** Bytes of a value as JSON (UTF-8), as it goes over the wire. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/** What the connection to a server is closed for when a message is over the cap. */
export function oversizeReason(maxBytes: number): string {
  return `it sent a message of more than ${formatBytes(maxBytes)} (proxy.maxResultBytes), so the bridge closed its connection`;
}
