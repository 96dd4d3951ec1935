// The MCP authorization flow for one proxied HTTP server. The SDK's transport meets a 401 and
// runs auth(): discovery, registration (or the configured client), then, with no usable tokens,
// redirectToAuthorization, which lands here: the loopback callback starts listening, the URL is
// told to the person (the log, the server's status, VS Code's notification), and the transport
// fails with UnauthorizedError. When the browser comes back with the code (and the right state)
// the code is exchanged here, tokens are stored, and the connection tries again. Refresh is the
// SDK's, on the next 401; when it fails, the SDK drops the tokens and a new sign-in is asked.
import { randomUUID } from 'node:crypto';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { freePort, listenForCallback, SignInError, type CallbackListener } from './callback-server.ts';
import { StoredClientProvider, type OAuthSettings } from './client-provider.ts';
import { RefreshCoalescer } from './refresh-coalescer.ts';
import { openableSignInUrl, type SignInBoard } from './sign-in-notices.ts';
import type { TokenStore } from './token-store.ts';

export interface ServerOAuthOptions {
  /** How long the loopback callback waits for the browser. */
  timeoutMs: number;
  log: (message: string) => void;
  board: SignInBoard;
  /** For the code exchange (bounded); the SDK's default otherwise. */
  fetch?: FetchLike;
  /** Why this server's OAuth settings cannot be used (said when it starts). */
  problem?: string;
}

interface Pending {
  url: string;
  listener: CallbackListener;
  /** Resolves once the code is exchanged and the tokens stored. */
  done: Promise<void>;
}

export class ServerOAuth {
  readonly provider: StoredClientProvider;
  /** Wraps the transports' fetch: concurrent refreshes of one token become one (refresh-coalescer.ts). */
  readonly refreshes = new RefreshCoalescer();
  private readonly name: string;
  private readonly serverUrl: string;
  private readonly options: ServerOAuthOptions;
  private pending: Pending | undefined;
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
    const reason = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').slice(0, 300);
    return `server "${this.name}" asks for a sign-in (HTTP 401), and the OAuth sign-in could not start: ${reason}. If it takes a token instead, give it as an Authorization header (or set "oauth": false)`;
  }

  /** Whether an error means "sign-in needed" (the SDK's UnauthorizedError, or our own). */
  static isSignInError(error: unknown): boolean {
    return error instanceof UnauthorizedError || error instanceof SignInError;
  }

  /** What to tell about a failure caused by a sign-in in progress; undefined when there is none. */
  message(): string | undefined {
    const pending = this.pending;
    if (!pending) return undefined;
    return `server "${this.name}" needs you to sign in: open ${pending.url} in a browser (the sign-in waits ${Math.round(this.options.timeoutMs / 1000)} s), then use the server again`;
  }

  /** Waits for the sign-in in progress (after an UnauthorizedError); throws when there is none or it failed. */
  async waitForSignIn(): Promise<void> {
    const pending = this.pending;
    if (!pending) throw new SignInError(`server "${this.name}" refused the bridge's credentials and no sign-in could be started`);
    await pending.done;
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
    if (this.closed) throw new SignInError(`server "${this.name}" is shut down`);
    // The URL comes from the server's metadata: only https (or loopback http) is shown or opened.
    if (!openableSignInUrl(url.href)) throw new SignInError(`server "${this.name}" gave an authorization URL that is neither https nor loopback; not opened`);
    if (!state) throw new SignInError('no state for the sign-in');
    // A newer request replaces an older one: its state and verifier are gone.
    this.pending?.listener.close();
    const port = this.provider.port;
    let listener: CallbackListener;
    try {
      listener = await listenForCallback(port, () => state, this.options.timeoutMs);
    } catch (error) {
      // The registered port is taken: register again on another one next time.
      await this.provider.dropPort().catch(() => undefined);
      throw new SignInError(`the sign-in callback port ${port} cannot be used (${(error as Error).message}); try again`);
    }
    const done = listener.code.then(async (code) => {
      const result = await auth(this.provider, { serverUrl: this.serverUrl, authorizationCode: code, ...(this.options.fetch ? { fetchFn: this.options.fetch } : {}) });
      if (result !== 'AUTHORIZED') throw new SignInError('the authorization server did not issue tokens');
      this.options.log(`server ${this.name}: signed in`);
    });
    const pending: Pending = { url: url.href, listener, done };
    this.pending = pending;
    done
      .catch((error: Error) => this.options.log(`server ${this.name}: sign-in failed: ${error.message}`))
      .finally(() => {
        if (this.pending !== pending) return;
        this.pending = undefined;
        this.options.board.set(this.name, undefined);
      });
    this.options.log(`server ${this.name}: sign-in needed; open this URL in a browser: ${url.href}`);
    this.options.board.set(this.name, { id: randomUUID(), server: this.name, url: url.href, expiresAt: Date.now() + this.options.timeoutMs });
  }
}
