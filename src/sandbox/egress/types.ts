// The contract of the sandbox's network (sandbox.network): what the egress proxy asks of the
// bridge and tells it. The container keeps `--network none`; its only way out is the bridge's
// HTTP proxy, reached through a unix socket mounted into it (a loopback forwarder inside the
// container, started by the kernel, makes it an ordinary HTTP_PROXY for urllib, requests, httpx
// and pip). Every request is checked against sandbox.network after the host resolved the name.

/** Where sandboxed code asked to go: the name (or address) as asked, lower case, and the port. */
export interface EgressTarget {
  host: string;
  port: number;
}

/**
 * The user's answer to "allow the sandbox to reach host:port?": this request only, the rest of
 * this session, always (added to the user's sandbox.network.allow), or no.
 */
export type EgressAnswer = 'once' | 'session' | 'always' | 'deny';

/** How a request through the proxy was decided. */
export type EgressDecision =
  /** Listed in sandbox.network.allow (or allowed for the session, or always). */
  | 'allowed'
  /** Asked, and the user allowed it. */
  | 'asked'
  /** Not listed, and not asked (ask is off, or the client cannot ask). */
  | 'refused'
  /** Asked, and the user said no (or did not answer in time). */
  | 'denied'
  /** A loopback, link-local or private address that is not listed exactly. */
  | 'private'
  /** A per-run cap (requests, bytes, connections) was reached. */
  | 'capped'
  /** No run of this session was in progress to own the request. */
  | 'no-run'
  /** The name did not resolve, or the connection failed. */
  | 'failed';

/** One request through the proxy, once it has ended: a line of the run log. */
export interface EgressRecord {
  runId: string;
  host: string;
  port: number;
  /** The HTTP method of a plain-HTTP request; "CONNECT" for a tunnel (HTTPS). */
  method: string;
  /** The address connected to, when one was. */
  address?: string;
  decision: EgressDecision;
  /** Bytes from the sandbox to the host, and back. */
  bytesOut: number;
  bytesIn: number;
  durationMs: number;
  /** Why it was refused or failed, in words. */
  reason?: string;
}

/** What the proxy asks of the run that owns a request (ExecuteOptions.egress). */
export interface EgressHandler {
  /**
   * Asks the user about a host that is not listed (only when sandbox.network.ask is on). The
   * run's clock is paused while it waits; concurrent requests to the same host share one
   * question. Rejects (or answers "deny") when the client cannot ask.
   */
  ask(target: EgressTarget, context: { runId: string; session: string; signal: AbortSignal }): Promise<EgressAnswer>;
  /** Every request, once it has ended, whatever its decision. */
  record(entry: EgressRecord): void;
}
