// The MCP authorization flow for one proxied HTTP server. The SDK's transport meets a 401 and
// runs auth(): discovery, registration (or the configured client), then, with no usable tokens,
// redirectToAuthorization, which lands here: the loopback callback starts listening, the URL is
// told to the person (the log, the server's status, VS Code's notification), and the transport
// fails with UnauthorizedError. When the browser comes back with the code (and the right state)
// the code is exchanged here, tokens are stored, and the connection tries again. Refresh is the
// SDK's, on the next 401; when it fails, the SDK drops the tokens and a new sign-in is asked.
// A 403 with `error="insufficient_scope"` (step-up) asks a new sign-in for the wider scope: the
// stored refresh token is held back meanwhile, since refreshing keeps the old scope.
// The authorization URL carries the sign-in's state: it goes to the log and VS Code's notice,
// never into an error the model or sandboxed code reads.
// One sign-in per server at a time (later calls share it), a few new ones a minute at most, and
// none at all in a hub beside the bridge (it would take the bridge's callback port).
import { randomUUID } from 'node:crypto';
import { auth, extractWWWAuthenticateParams, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { authServerText } from './auth-server-text.ts';
import { freePort, isOurCallback, listenForCallback, SignInError, type CallbackListener } from './callback-server.ts';
import { StoredClientProvider, type OAuthSettings } from './client-provider.ts';
import { RefreshCoalescer } from './refresh-coalescer.ts';
import { openableSignInUrl, type SignInBoard } from '../../../state/sign-in-notices.ts';
import type { TokenStore } from '../../../state/oauth-tokens.ts';

export { authServerText, MAX_AUTH_TEXT } from './auth-server-text.ts';

export interface ServerOAuthOptions {
  /** How long the loopback callback waits for the browser. */
  timeoutMs: number;
  log: (message: string) => void;
  board: SignInBoard;
  /** For the code exchange (bounded); the SDK's default otherwise. */
  fetch?: FetchLike;
  /** Why this server's OAuth settings cannot be used (said when it starts). */
  problem?: string;
  /**
   * false: never begin a sign-in (stored tokens only; "sign-in needed" otherwise). For a hub
   * beside the bridge (VS Code's Refresh Tools), which must not take the bridge's callback port.
   */
  interactive?: boolean;
  /** At most this many new sign-ins per server per SIGN_IN_WINDOW_MS (a loop of 401s asks only so often). */
  maxSignIns?: number;
}

/** The window of the sign-in rate limit. */
const SIGN_IN_WINDOW_MS = 60_000;
const MAX_SIGN_INS = 3;

interface Pending {
  url: string;
  listener: CallbackListener;
  /** Resolves once the code is exchanged and the tokens stored. */
  done: Promise<void>;
}

export class ServerOAuth {
  readonly provider: StoredClientProvider;
  /** Concurrent refreshes of one token become one (refresh-coalescer.ts); see wrap(). */
  private readonly refreshes = new RefreshCoalescer();
  private readonly name: string;
  private readonly serverUrl: string;
  private readonly options: ServerOAuthOptions;
  private pending: Pending | undefined;
  /** A sign-in being set up (its callback starting to listen): later calls wait for it. */
  private starting: Promise<void> | undefined;
  /** When the last new sign-ins began (ms), for the rate limit. */
  private starts: number[] = [];
  private closed = false;

  constructor(name: string, serverUrl: string, store: TokenStore, settings: OAuthSettings, options: ServerOAuthOptions) {
    this.name = name;
    this.serverUrl = serverUrl;
    this.options = options;
    this.provider = new StoredClientProvider(store, settings, (url, state) => this.begin(url, state));
  }

  /** Before a connection attempt: the redirect port must be known before the SDK registers or redirects. */
  async prepare(): Promise<void> {
    if (this.options.problem) throw new SignInError(this.options.problem);
    await this.provider.prepare(freePort);
  }

  /** Before each connection attempt: forget whether the last one met the flow. */
  beginAttempt(): void {
    this.provider.authRan = false;
  }

  /**
   * Why the attempt failed, when the server answered 401 and the flow itself failed (no
   * metadata, registration refused...): the SDK's own error says little of that.
   */
  flowFailure(error: unknown): string | undefined {
    if (!this.provider.authRan || ServerOAuth.isSignInError(error)) return undefined;
    const reason = authServerText(error);
    return `server "${this.name}" asks for a sign-in (HTTP 401), and the OAuth sign-in could not start: ${reason}. If it takes a token instead, give it as an Authorization header (or set "oauth": false)`;
  }

  /** Whether an error means "sign-in needed" (the SDK's UnauthorizedError, or our own). */
  static isSignInError(error: unknown): boolean {
    return error instanceof UnauthorizedError || error instanceof SignInError;
  }

  /** What to tell about a failure caused by a sign-in in progress (never its URL); undefined when there is none. */
  message(): string | undefined {
    if (!this.pending) return undefined;
    return signInNeeded(this.name, this.options.timeoutMs);
  }

  /** Whether a sign-in is in progress (its callback listening). */
  get signingIn(): boolean {
    return this.pending !== undefined;
  }

  /** Waits for the sign-in in progress (after an UnauthorizedError); throws when there is none or it failed. */
  async waitForSignIn(): Promise<void> {
    const pending = this.pending;
    if (!pending) throw new SignInError(`server "${this.name}" refused the bridge's credentials and no sign-in could be started`);
    await pending.done;
  }

  /**
   * The transports' fetch: concurrent refreshes of one token become one (refresh-coalescer.ts),
   * and a 403 asking for a wider scope makes the SDK's next auth() ask a new sign-in.
   */
  wrap(base: FetchLike): FetchLike {
    const coalesced = this.refreshes.wrap(base);
    return async (url, init) => {
      const response = await coalesced(url, init);
      if (response.status === 403 && extractWWWAuthenticateParams(response).error === 'insufficient_scope') this.provider.stepUp();
      return response;
    };
  }

  /** Ends a sign-in in progress (its server is stopped); a later use asks again. */
  cancel(): void {
    this.pending?.listener.close();
  }

  close(): void {
    this.closed = true;
    this.cancel();
  }

  /** The SDK's redirectToAuthorization: listen, then tell the person. */
  private async begin(url: URL, state: string | undefined): Promise<void> {
    // Calls at the same time share the sign-in in progress (the provider kept its state and verifier).
    if (this.pending) return;
    if (this.starting) {
      await this.starting.catch(() => undefined);
      return;
    }
    const starting = this.start(url, state);
    this.starting = starting;
    try {
      await starting;
    } catch (error) {
      this.provider.endSignIn();
      throw error;
    } finally {
      if (this.starting === starting) this.starting = undefined;
    }
  }

  private async start(url: URL, state: string | undefined): Promise<void> {
    if (this.closed) throw new SignInError(`server "${this.name}" is shut down`);
    if (this.options.interactive === false)
      throw new SignInError(`server "${this.name}" needs a sign-in; it is asked when the agent uses the server (run_python)`);
    // The URL comes from the server's metadata: only https (or loopback http) is shown or opened.
    if (!openableSignInUrl(url.href))
      throw new SignInError(`server "${this.name}" gave an authorization URL that is neither https nor loopback; not opened`);
    if (!state) throw new SignInError('no state for the sign-in');
    const now = Date.now();
    this.starts = this.starts.filter((at) => now - at < SIGN_IN_WINDOW_MS);
    if (this.starts.length >= (this.options.maxSignIns ?? MAX_SIGN_INS)) {
      throw new SignInError(
        `server "${this.name}" asked for ${this.starts.length} sign-ins within ${SIGN_IN_WINDOW_MS / 1000} s; no new one is asked before ${Math.ceil((this.starts[0]! + SIGN_IN_WINDOW_MS - now) / 1000)} s`,
      );
    }
    const port = this.provider.port;
    let listener: CallbackListener;
    try {
      listener = await listenForCallback(port, () => state, this.options.timeoutMs);
    } catch (error) {
      // Another bridge (a second window) waits on it for the same sign-in: its registration stays.
      if (await isOurCallback(port))
        throw new SignInError(
          `server "${this.name}": a sign-in to it is in progress in another window; finish it there, then use the server again`,
        );
      // The registered port is taken by something else: register again on another one next time.
      await this.provider.dropPort().catch(() => undefined);
      throw new SignInError(`the sign-in callback port ${port} cannot be used (${(error as Error).message}); try again`);
    }
    if (this.closed) {
      listener.close();
      throw new SignInError(`server "${this.name}" is shut down`);
    }
    this.starts.push(now);
    const done = listener.code.then(async (code) => {
      const result = await auth(this.provider, {
        serverUrl: this.serverUrl,
        authorizationCode: code,
        ...(this.options.fetch ? { fetchFn: this.options.fetch } : {}),
      });
      if (result !== 'AUTHORIZED') throw new SignInError('the authorization server did not issue tokens');
      this.options.log(`server ${this.name}: signed in`);
    });
    // The authorization server's words are capped wherever they are told.
    const capped = done.catch((error: unknown) => {
      throw new SignInError(authServerText(error));
    });
    const pending: Pending = { url: url.href, listener, done: capped };
    this.pending = pending;
    capped
      .catch((error: Error) => this.options.log(`server ${this.name}: sign-in failed: ${error.message}`))
      .finally(() => {
        if (this.pending !== pending) return;
        this.pending = undefined;
        this.provider.endSignIn();
        this.options.board.set(this.name, undefined);
      });
    this.options.log(`server ${this.name}: sign-in needed; open this URL in a browser: ${url.href}`);
    this.options.board.set(this.name, {
      id: randomUUID(),
      server: this.name,
      url: url.href,
      expiresAt: Date.now() + this.options.timeoutMs,
    });
  }
}

/**
 * What the model and sandboxed code are told while a sign-in waits: which server, and that the
 * user signs in (VS Code's notification, or the address in the bridge's log). Never the URL:
 * it carries the sign-in's state, which must not travel further than the person's browser.
 */
export function signInNeeded(server: string, timeoutMs: number): string {
  return (
    `server "${server}" needs the user to sign in: ask the user to sign in to ${server} ` +
    `(in VS Code: the "Sign in to ${server}" notification, button Sign In; on the command line: the sign-in address the bridge wrote to its log) ` +
    `within ${Math.round(timeoutMs / 1000)} s; calls to it wait for the sign-in, or use the server again once signed in`
  );
}
