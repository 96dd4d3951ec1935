// The one taxonomy of why a request of sandboxed code failed. An error carries its `kind`; the
// host's reply carries it to the sandbox, where it is ToolError.kind as it is, and the run log
// records the outcome it implies. Nothing compares class names.

export const ERROR_KINDS = [
  'denied',
  'unknown-server',
  'unknown-tool',
  'unavailable',
  'too-large',
  'needs-consent',
  'server-error',
  'declined',
  'needs-confirmation',
  'run-ended',
  'failed',
] as const;
export type ErrorKind = (typeof ERROR_KINDS)[number];

/** An error that says its kind. */
export interface KindedError extends Error {
  readonly kind: ErrorKind;
}

/** The kind an error carries; "failed" for any other error. */
export function kindOf(error: unknown): ErrorKind {
  const kind = error instanceof Error ? (error as Partial<KindedError>).kind : undefined;
  return typeof kind === 'string' && (ERROR_KINDS as readonly string[]).includes(kind) ? kind : 'failed';
}

/** How a refused or failed request is recorded in the run log. */
export function outcomeOfKind(kind: ErrorKind): 'declined' | 'denied' | 'failed' {
  if (kind === 'declined') return 'declined';
  return kind === 'denied' || kind === 'needs-consent' || kind === 'needs-confirmation' || kind === 'run-ended' ? 'denied' : 'failed';
}
