// Which proxied servers use the MCP authorization flow, and what each needs for it. An HTTP
// server does unless its entry says `oauth: false` or sends its own Authorization header.
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { HttpServerConfig, ServerConfig } from '../../../config/schema.ts';
import { substitute, VariableError, type VariableContext } from '../../../config/variables.ts';
import { Flow } from '../guarded-transport.ts';
import { limitedFetch } from '../limited-fetch.ts';
import { isStdio } from '../transports.ts';
import { OWNER_ENV } from '../../../state/catalog-file.ts';
import type { StartContext } from '../connection.ts';
import { ServerOAuth } from './server-oauth.ts';
import { SignInBoard } from '../../../state/sign-in-notices.ts';
import { TokenStore } from '../../../state/oauth-tokens.ts';

export interface OAuthContext {
  stateDir: string;
  /** Seals the token files (VS Code); absent: plain 0600 files (the CLI). */
  key?: Buffer | undefined;
  board: SignInBoard;
  log: (message: string) => void;
  /** false: stored tokens only, never a new sign-in (server-oauth.ts). */
  interactive?: boolean;
}

/** The hub's part: one flow per server that uses OAuth, all closed with the hub. */
export class HubOAuth {
  private readonly context: OAuthContext;
  private readonly flows: ServerOAuth[] = [];

  constructor(
    stateDir: string,
    key: Buffer | undefined,
    log: (message: string) => void,
    owner: string | undefined = process.env[OWNER_ENV],
    interactive = true,
  ) {
    this.context = { stateDir, key, board: new SignInBoard(stateDir, owner), log, interactive };
  }

  /** Gives a server's start context its flow (and the client secret to redact; its tokens are redacted by the connection), when it uses one. */
  attach(start: StartContext, name: string, server: ServerConfig): void {
    const secrets: string[] = [];
    const flow = serverOAuth(name, server, this.context, start.variables, secrets);
    if (!flow) return;
    this.flows.push(flow);
    start.oauth = flow;
    start.secretValues = [...start.secretValues, ...secrets];
  }

  close(): void {
    for (const flow of this.flows) flow.close();
  }
}

/** The most bytes of the authorization server's answer to the code exchange (discovery, registration and refresh go through the transport's capped fetch). */
export const MAX_AUTH_RESPONSE_BYTES = 1024 * 1024;
const AUTH_REQUEST_MS = 30_000;

function usesOAuth(server: ServerConfig): server is HttpServerConfig {
  if (isStdio(server)) return false;
  const http = server;
  if (http.oauth === false) return false;
  return !Object.keys(http.headers).some((name) => name.toLowerCase() === 'authorization');
}

/**
 * The flow for one server, or undefined when it does not use one. `secretValues` gets the
 * resolved client secret, for redaction. A reference that cannot be resolved is said when the
 * server starts.
 */
function serverOAuth(
  name: string,
  server: ServerConfig,
  context: OAuthContext,
  variables: VariableContext,
  secretValues: string[],
): ServerOAuth | undefined {
  if (!usesOAuth(server)) return undefined;
  const settings = server.oauth || undefined;
  let clientSecret: string | undefined;
  let problem: string | undefined;
  if (settings?.clientSecret) {
    try {
      clientSecret = substitute(settings.clientSecret, variables) || undefined;
      if (!clientSecret) problem = `server "${name}": oauth.clientSecret ${settings.clientSecret} is empty`;
      else secretValues.push(clientSecret);
    } catch (error) {
      if (!(error instanceof VariableError)) throw error;
      problem = `server "${name}": oauth.clientSecret: ${error.message}`;
    }
  }
  let url = server.url;
  try {
    url = substitute(server.url, variables);
  } catch {
    // The connection says what is wrong with its URL.
  }
  const store = new TokenStore(context.stateDir, name, url, context.key, context.log);
  return new ServerOAuth(
    name,
    url,
    store,
    {
      clientId: settings?.clientId,
      clientSecret,
      scopes: settings?.scopes ?? [],
      callbackPort: settings?.callbackPort,
      clientMetadataUrl: settings?.clientMetadataUrl,
    },
    {
      timeoutMs: (settings?.signInTimeoutSeconds ?? 300) * 1000,
      log: context.log,
      board: context.board,
      fetch: authFetch(),
      interactive: context.interactive ?? true,
      ...(problem ? { problem } : {}),
    },
  );
}

/** Requests to the authorization server: bounded in time and size like everything a server sends. */
export function authFetch(plain: FetchLike = (url, init) => fetch(url, init), timeoutMs = AUTH_REQUEST_MS): FetchLike {
  const base: FetchLike = (url, init) => plain(url, { ...init, signal: init?.signal ?? AbortSignal.timeout(timeoutMs) });
  return limitedFetch(base, { maxBytes: MAX_AUTH_RESPONSE_BYTES, flow: new Flow(), onOversize: () => undefined });
}
