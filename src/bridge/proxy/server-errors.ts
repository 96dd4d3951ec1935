// What a failed request to a proxied server becomes for sandboxed code: the server cannot be
// used now (ServerUnavailableError), or it answered with a JSON-RPC error (ServerError, its code
// and capped, redacted data passed on). A sign-in the server wants and a message over the size
// cap are said as such.
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { clip } from '../../shared/clip.ts';
import type { KindedError } from '../../shared/error-kinds.ts';
import { callReason, SEE_LOG } from './failures.ts';
import { oversizeReason, ProxyLimitError } from './limits.ts';
import { ServerOAuth } from './oauth/server-oauth.ts';

/** The server cannot be used now. `message` is for sandboxed code; `detail` for people. */
export class ServerUnavailableError extends Error implements KindedError {
  override readonly name = 'ServerUnavailableError';
  readonly kind = 'unavailable';
  readonly detail: string;
  constructor(message: string, detail: string = message) {
    super(message);
    this.detail = detail;
  }
}

/**
 * The server answered a request with a JSON-RPC error: it is alive, and said no. Its code and
 * data (capped) reach sandboxed code (ToolError.code / .data); the message is the server's,
 * said once ("MCP error -32602: ..." with no repeated prefix).
 */
export class ServerError extends Error implements KindedError {
  override readonly name = 'ServerError';
  readonly kind = 'server-error';
  readonly code: number;
  readonly data: unknown;
  constructor(message: string, code: number, data: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
  /** What the sandbox gets besides the message (see sandbox/sessions/run.ts). */
  get hostDetails(): Record<string, unknown> {
    return { code: this.code, ...(this.data !== undefined ? { data: this.data } : {}) };
  }
}

/** The most bytes of an error's data (as JSON) passed on; more is replaced by a note. */
const MAX_ERROR_DATA_BYTES = 16 * 1024;

/** "MCP error -32042: MCP error -32042: text" -> "text" (the SDK prefixes on each side). */
export function bareErrorMessage(message: string): string {
  let text = message;
  for (let i = 0; i < 4; i++) {
    const next = text.replace(/^MCP error -?\d+: /, '');
    if (next === text) break;
    text = next;
  }
  return text;
}

/** An error's data as sandboxed code gets it: JSON, redacted, at most MAX_ERROR_DATA_BYTES. */
function cappedData(data: unknown, redact: (text: string) => string): unknown {
  if (data === undefined) return undefined;
  let json: string;
  try {
    json = JSON.stringify(data) ?? 'null';
  } catch {
    return undefined;
  }
  const redacted = redact(json);
  if (Buffer.byteLength(redacted, 'utf8') > MAX_ERROR_DATA_BYTES)
    return { truncated: true, note: `the error's data was over ${MAX_ERROR_DATA_BYTES} bytes as JSON`, start: redacted.slice(0, 1000) };
  try {
    return JSON.parse(redacted);
  } catch {
    return redacted;
  }
}

/** What `explain` needs to know of the server and of the connection the request went over. */
export interface ExplainContext {
  name: string;
  oauth: ServerOAuth | undefined;
  /** The connection sent a message over the size cap. */
  oversize: boolean;
  /** Why the connection closed, when it did. */
  closedReason: string | undefined;
  maxResultBytes: number;
  redact: (text: string) => string;
  /** The server wrote something on its stderr. */
  wroteStderr: boolean;
}

/** `error`, from `doing` ("calling x", "listing tools"), as sandboxed code is told it. */
export function explain(error: unknown, doing: string, context: ExplainContext): Error {
  const { name, redact } = context;
  if (error instanceof ServerUnavailableError || error instanceof ProxyLimitError) return error;
  // The server wants a sign-in (its tokens expired and could not be refreshed, or were signed out).
  const signIn = context.oauth && ServerOAuth.isSignInError(error) ? context.oauth.message() : undefined;
  if (signIn) return new ServerUnavailableError(signIn);
  if (context.oversize) {
    return new ProxyLimitError(
      `server "${name}" failed ${doing}: ${oversizeReason(context.maxResultBytes)}; it is started again on next use`,
    );
  }
  if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed && context.closedReason) {
    return new ServerUnavailableError(`server "${name}" failed ${doing}: ${context.closedReason}${seeLog(context.wroteStderr)}`);
  }
  // The SDK's own codes (timeout, closed connection) are not the server's answer.
  if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed && error.code !== ErrorCode.RequestTimeout) {
    const message = clip(redact(bareErrorMessage(error.message)), 2000);
    return new ServerError(
      `server "${name}" failed ${doing}: MCP error ${error.code}: ${message}`,
      error.code,
      cappedData(error.data, redact),
    );
  }
  return new ServerUnavailableError(redact(`server "${name}" failed ${doing}: ${callReason(error)}`));
}

/** " (its error output is in the ... log)" when the server wrote anything on stderr. */
export function seeLog(wroteStderr: boolean): string {
  return wroteStderr ? ` (${SEE_LOG})` : '';
}
