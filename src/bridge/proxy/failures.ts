// Why a proxied server failed, in our words. What a server writes (its stderr, the text of its
// errors) is untrusted and may hold secrets: it goes to the bridge's log and the user's views,
// redacted, never to sandboxed code. The sandbox hears only these sentences.
import { SseError } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { OAuthError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { authServerText } from './oauth/auth-server-text.ts';
import { ProxyLimitError } from './limits.ts';
import { clip } from '../../shared/clip.ts';
import { secondsText } from '../../shared/durations.ts';

/** Appended to what the sandbox hears when the server wrote something on stderr. */
export const SEE_LOG = 'its error output is in the Code Execution Mode log';

/** How a stdio server's process ended. */
export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** "it exited with code 1", "it was ended by SIGKILL". */
export function exitText(exit: ExitInfo): string {
  if (exit.code !== null) return `it exited with code ${exit.code}`;
  if (exit.signal) return `it was ended by ${exit.signal}`;
  return 'it exited';
}

/** A start that did not finish within the connect timeout. */
export class StartTimeout extends Error {}

/**
 * Why a start failed, as a phrase after `server "x" `: "could not start: it exited with code 1",
 * "did not finish starting within 6 s (proxy.connectTimeoutSeconds)". Only codes and our own
 * facts, never a server's text.
 */
export function startReason(error: unknown, exit: ExitInfo | undefined, connectMs: number, command?: string): string {
  if (error instanceof StartTimeout || (error instanceof McpError && error.code === ErrorCode.RequestTimeout)) {
    return `did not finish starting within ${secondsText(connectMs)} (proxy.connectTimeoutSeconds)`;
  }
  if (exit) return `could not start: ${exitText(exit)}`;
  return `could not start: ${causeText(error, command)}`;
}

function causeText(error: unknown, command: string | undefined): string {
  if (error instanceof ProxyLimitError) return error.message;
  const code = errorCode(error);
  if (code === 'ENOENT') return command ? `the command "${command}" was not found` : 'its command was not found';
  if (code === 'EACCES' || code === 'EPERM')
    return command ? `the command "${command}" could not be run (permission denied)` : 'its command could not be run';
  if (error instanceof StreamableHTTPError || error instanceof SseError) {
    const status = typeof error.code === 'number' ? error.code : undefined;
    return status !== undefined && status >= 100
      ? `its URL answered with HTTP status ${status}`
      : 'its URL did not answer as an MCP server';
  }
  if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return `its URL could not be reached (${code})`;
  if (error instanceof McpError) {
    return error.code === ErrorCode.ConnectionClosed
      ? 'its connection closed before it was ready'
      : `it refused to start a session (MCP error ${error.code})`;
  }
  if (error instanceof Error && error.message.startsWith("Server's protocol version is not supported")) {
    return 'it speaks a version of MCP this bridge does not support';
  }
  if (error instanceof Error && (error.name === 'ZodError' || error instanceof SyntaxError)) return 'it did not answer as an MCP server';
  return 'its connection failed';
}

/**
 * Why a call or listing failed, as a phrase. A JSON-RPC error is the server's answer to the
 * call (like a result, it is passed on, cut short); transport failures are said in our words.
 */
export function callReason(error: unknown): string {
  if (error instanceof McpError || error instanceof ProxyLimitError) return clip(error.message, 2000);
  // An authorization server's refusal (a refresh during the call): its words, cleaned and capped.
  if (error instanceof OAuthError) return `its authorization server refused: ${authServerText(error)}`;
  if (error instanceof StreamableHTTPError || error instanceof SseError) return causeText(error, undefined);
  if (typeof errorCode(error) === 'string') return causeText(error, undefined);
  // V8 quotes the text it failed to parse; zod may quote values.
  if (error instanceof SyntaxError || (error instanceof Error && error.name === 'ZodError'))
    return 'it answered with something that is not a valid MCP message';
  return clip(error instanceof Error ? error.message : String(error), 500);
}

/** The system error code of an error or of its cause (fetch puts it there). */
function errorCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}
