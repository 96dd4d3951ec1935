// The SDK's OAuthClientProvider for one proxied HTTP server, over its TokenStore. The SDK
// drives the flow (discovery, registration, PKCE, token exchange, refresh); this only keeps
// what it hands over. The PKCE verifier and the state stay in memory: a sign-in is finished
// by the bridge process that began it.
import { randomBytes } from 'node:crypto';
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import {
  OAuthClientInformationFullSchema,
  OAuthTokensSchema,
  type OAuthClientInformationMixed,
  type OAuthClientMetadata,
  type OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { redirectUrlFor } from './callback-server.ts';
import type { TokenStore } from '../../../state/oauth-tokens.ts';

/** One server's OAuth settings, with the client secret already resolved from its reference. */
export interface OAuthSettings {
  clientId?: string | undefined;
  clientSecret?: string | undefined;
  scopes: readonly string[];
  callbackPort?: number | undefined;
  /** An https URL of a client ID metadata document: the client_id where the authorization server takes one. */
  clientMetadataUrl?: string | undefined;
}

/** How many token values are remembered for redaction (a few refreshes' worth). */
const MAX_REMEMBERED = 16;

/** Whether the stored tokens carry another refresh token than the one that was refused. */
function isNewer(stored: Record<string, unknown> | undefined, refused: string | undefined): boolean {
  const current = stored?.refresh_token;
  return typeof current === 'string' && refused !== undefined && current !== refused;
}

export class StoredClientProvider implements OAuthClientProvider {
  private readonly store: TokenStore;
  private readonly settings: OAuthSettings;
  private readonly onRedirect: (url: URL, state: string | undefined) => Promise<void>;
  /** The loopback port of the redirect URI; chosen by prepare(). */
  port = 0;
  private verifier: string | undefined;
  /** The state of the sign-in in progress: kept until it ends, so calls at the same time share it. */
  private signInState: string | undefined;
  /** The refresh token last handed to the SDK: on invalid_grant only that one is dropped. */
  private lastRefreshToken: string | undefined;
  /** Every token value seen (newest last, bounded), for redaction. */
  private readonly seen: string[] = [];
  /** Set when the SDK's auth() ran (it asks for the discovery state first): the server answered 401. */
  authRan = false;
  /** The server asked for a wider scope (403 insufficient_scope): until a sign-in ends, no refresh (it keeps the old scope). */
  private steppingUp = false;

  constructor(store: TokenStore, settings: OAuthSettings, onRedirect: (url: URL, state: string | undefined) => Promise<void>) {
    this.store = store;
    this.settings = settings;
    this.onRedirect = onRedirect;
  }

  /** Picks the redirect port: configured, else the one the stored client was registered with, else a free one. */
  async prepare(freePort: () => Promise<number>): Promise<void> {
    if (this.settings.callbackPort) {
      this.port = this.settings.callbackPort;
      return;
    }
    if (this.port) return;
    const stored = await this.store.read();
    this.port = stored.redirectPort ?? (await freePort());
  }

  /** Forgets the port (something else holds it): the next prepare() picks another and the client registers again. */
  async dropPort(): Promise<void> {
    this.port = 0;
    await this.store.update(({ client: _c, redirectPort: _p, ...rest }) => rest);
  }

  /**
   * A URL-based client id (client ID metadata document), used instead of registering where the
   * authorization server says it takes one; a configured clientId comes first.
   */
  get clientMetadataUrl(): string | undefined {
    return this.settings.clientId ? undefined : this.settings.clientMetadataUrl;
  }

  get redirectUrl(): string {
    return redirectUrlFor(this.port);
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Code Execution Mode',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: this.settings.clientSecret ? 'client_secret_post' : 'none',
      ...(this.settings.scopes.length > 0 ? { scope: this.settings.scopes.join(' ') } : {}),
    };
  }

  state(): string {
    this.signInState ??= randomBytes(32).toString('base64url');
    return this.signInState;
  }

  /** The sign-in ended (signed in, failed or cancelled): the next one gets a new state and verifier. */
  endSignIn(): void {
    this.signInState = undefined;
    this.verifier = undefined;
    this.steppingUp = false;
  }

  /** The server refused the token for its scope: the next auth() asks a new sign-in (with the scope the server named). */
  stepUp(): void {
    this.steppingUp = true;
  }

  /** The token values this provider handed out or saved (current and recent), for redaction. */
  tokenValues(): readonly string[] {
    return this.seen;
  }

  private remember(tokens: OAuthTokens): void {
    for (const value of [tokens.access_token, tokens.refresh_token, tokens.id_token]) {
      if (!value || this.seen.includes(value)) continue;
      this.seen.push(value);
      if (this.seen.length > MAX_REMEMBERED) this.seen.shift();
    }
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    if (this.settings.clientId) {
      return { client_id: this.settings.clientId, ...(this.settings.clientSecret ? { client_secret: this.settings.clientSecret } : {}) };
    }
    const stored = await this.store.read();
    // A client registered with another redirect port would be refused at the callback.
    if (!stored.client || stored.redirectPort !== this.port) return undefined;
    // A URL-based client id is not a registration: it has no redirect URIs of its own.
    const urlClient = this.clientMetadataUrl;
    if (urlClient && stored.client.client_id === urlClient) return stored.client as OAuthClientInformationMixed;
    const parsed = OAuthClientInformationFullSchema.safeParse(stored.client);
    return parsed.success ? (stored.client as OAuthClientInformationMixed) : undefined;
  }

  async saveClientInformation(info: OAuthClientInformationMixed): Promise<void> {
    // A configured client id is the user's: nothing to keep.
    if (this.settings.clientId) return;
    await this.store.update((record) => ({ ...record, client: { ...info }, redirectPort: this.port }));
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    const stored = await this.store.read();
    if (!stored.tokens) return undefined;
    const parsed = OAuthTokensSchema.safeParse(stored.tokens);
    if (!parsed.success) return undefined;
    this.remember(parsed.data);
    this.lastRefreshToken = parsed.data.refresh_token;
    if (this.steppingUp) {
      const { refresh_token: _held, ...access } = parsed.data;
      return access;
    }
    return parsed.data;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    this.remember(tokens);
    await this.store.update((record) => ({ ...record, tokens: { ...tokens }, savedAt: Date.now() }));
  }

  redirectToAuthorization(url: URL): Promise<void> {
    return this.onRedirect(url, this.signInState);
  }

  saveCodeVerifier(verifier: string): void {
    // A sign-in in progress keeps its verifier: its URL (already shown) carries that challenge.
    this.verifier ??= verifier;
  }

  codeVerifier(): string {
    if (!this.verifier) throw new Error('no sign-in in progress');
    return this.verifier;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    if (scope === 'verifier' || scope === 'all') this.verifier = undefined;
    if (scope === 'verifier') return;
    await this.store.update((record) => {
      const next = { ...record };
      if (scope === 'all' || scope === 'client') delete next.client;
      // Another process (a second window) may have refreshed meanwhile: its fresh tokens stay.
      if (scope === 'tokens' && isNewer(record.tokens, this.lastRefreshToken)) return record;
      if (scope === 'all' || scope === 'tokens') {
        delete next.tokens;
        delete next.savedAt;
      }
      if (scope === 'all' || scope === 'discovery') delete next.discovery;
      return next;
    });
  }

  async saveDiscoveryState(state: OAuthDiscoveryState): Promise<void> {
    await this.store.update((record) => ({ ...record, discovery: JSON.parse(JSON.stringify(state)) as Record<string, unknown> }));
  }

  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    this.authRan = true;
    const stored = await this.store.read();
    const discovery = stored.discovery;
    return discovery && typeof discovery.authorizationServerUrl === 'string' ? (discovery as unknown as OAuthDiscoveryState) : undefined;
  }
}
