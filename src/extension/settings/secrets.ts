// Server secrets (tokens, API keys) in VS Code's SecretStorage: entered once, never written to
// settings. An index in globalState remembers which secrets exist, since SecretStorage
// cannot list its keys. Three kinds: an environment variable (stdio), a header (HTTP), and the
// value of an `${input:ID}` variable the server's entry uses (as mcp.json's inputs).
import * as vscode from 'vscode';
import type { Secrets } from '../../config/secrets.ts';

const INDEX_KEY = 'codeExecutionMode.secretIndex';

export type SecretKind = 'env' | 'headers' | 'inputs';

interface IndexEntry {
  server: string;
  kind: SecretKind;
  name: string;
}

export class ServerSecrets {
  private readonly context: vscode.ExtensionContext;
  readonly onDidChange: vscode.Event<void>;
  private readonly changed = new vscode.EventEmitter<void>();

  constructor(context: vscode.ExtensionContext) {
    this.context = context;
    this.onDidChange = this.changed.event;
    context.subscriptions.push(
      this.changed,
      context.secrets.onDidChange((e) => {
        if (e.key.startsWith('server:')) this.changed.fire();
      }),
    );
  }

  private index(): IndexEntry[] {
    return this.context.globalState.get<IndexEntry[]>(INDEX_KEY) ?? [];
  }

  private key(entry: IndexEntry): string {
    return `server:${entry.server}:${entry.kind}:${entry.name}`;
  }

  async set(server: string, kind: SecretKind, name: string, value: string): Promise<void> {
    const entry = { server, kind, name };
    await this.context.secrets.store(this.key(entry), value);
    const index = this.index().filter((e) => this.key(e) !== this.key(entry));
    await this.context.globalState.update(INDEX_KEY, [...index, entry]);
    this.changed.fire();
  }

  names(server: string): IndexEntry[] {
    return this.index().filter((e) => e.server === server);
  }

  async removeServer(server: string): Promise<void> {
    for (const entry of this.names(server)) await this.context.secrets.delete(this.key(entry));
    await this.context.globalState.update(
      INDEX_KEY,
      this.index().filter((e) => e.server !== server),
    );
    this.changed.fire();
  }

  /** Every stored secret, grouped by server, in the shape the bridge takes. */
  async all(): Promise<Secrets> {
    const out: Secrets = {};
    for (const entry of this.index()) {
      const value = await this.context.secrets.get(this.key(entry));
      if (value === undefined) continue;
      const server = (out[entry.server] ??= { env: {}, headers: {} });
      (server[entry.kind] ??= {})[entry.name] = value;
    }
    return out;
  }
}
