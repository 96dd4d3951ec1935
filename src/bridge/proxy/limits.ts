// The byte and rate caps on what proxied servers send and what sandboxed code sends them, and
// the error that names the cap that was hit. Servers are untrusted: without these, one of them
// could take the bridge's memory (a 300 MB result) or its CPU (a notification flood).
import type { ProxyConfig } from '../../config/schema.ts';
import { sizeText } from '../../shared/byte-size.ts';
import type { KindedError } from '../../shared/error-kinds.ts';

export type ProxyLimits = Pick<
  ProxyConfig,
  'maxResultBytes' | 'maxArgumentBytes' | 'maxToolsPerServer' | 'maxToolListBytes' | 'maxToolSchemaBytes' | 'maxNotificationsPerSecond'
>;

/** A cap was hit; the message names it (as its configuration key) and says what happened. */
export class ProxyLimitError extends Error implements KindedError {
  override readonly name = 'ProxyLimitError';
  readonly kind = 'too-large';
}

/** Bytes of a value as JSON (UTF-8), as it goes over the wire. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/** What the connection to a server is closed for when a message is over the cap. */
export function oversizeReason(maxBytes: number): string {
  return `it sent a message of more than ${sizeText(maxBytes)} (proxy.maxResultBytes), so the bridge closed its connection`;
}
