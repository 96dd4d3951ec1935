// Gives VS Code the bundled bridge as an MCP stdio server, so agent mode sees run_python with
// no mcp.json. The configuration goes by file (no secrets in it); the server secrets go in a
// second file beside it, sealed with the token key (state/secrets-file.ts), whose path and key
// the bridge gets in its environment. The running bridge applies changes of the servers, their
// secrets, proxy and result settings from the files itself (its sessions keep their state); only
// a change that needs a new sandbox or bridge bumps the version, so that VS Code restarts it.
// Without a key (SecretStorage failed) nothing secret is written: the secrets go in the
// environment at start, and a secret change bumps the version too.
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { OWNER_ENV } from '../state/catalog-file.ts';
import { noteRestart } from '../state/bridge-restarts.ts';
import { ensurePrivateDirAsync, writePrivateFile } from '../state/private-files.ts';
import { CLIENT_ENV } from '../bridge/server.ts';
import type { Config } from '../config/schema.ts';
import { restartKey, restartReasons } from '../config/restart-keys.ts';
import { SECRETS_ENV, type Secrets } from '../config/secrets.ts';
import { TOKEN_KEY_ENV } from '../state/oauth-tokens.ts';
import { SECRETS_FILE_ENV, SECRETS_FILE_NAME, writeSecretsFile } from '../state/secrets-file.ts';
import type { ServerSecrets } from './settings/secrets.ts';

export const PROVIDER_ID = 'codeExecutionMode.bridge';
export const SERVER_LABEL = 'Code Execution Mode';

export class BridgeProvider implements vscode.McpServerDefinitionProvider<vscode.McpStdioServerDefinition> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeMcpServerDefinitions = this.changed.event;
  private version = '';
  private readonly cliPath: string;
  private readonly configFile: string;
  private readonly secrets: ServerSecrets;
  private readonly log: vscode.LogOutputChannel;
  private readonly owner: string;
  /** The key that seals OAuth token files (sign-in.ts), given to the bridge with the secrets. */
  tokenKey: (() => Promise<string | undefined>) | undefined;
  private restarts = 0;
  /** What the running bridge was started with (to name what a restart is for). */
  private started: { config: Config; secrets: string } | undefined;
  private written = '';
  /** The sealed secrets file: written before the configuration file, so that one reload reads both. */
  private readonly secretsFile: string;
  /** The secrets (JSON) the sealed file holds; writes are queued, each reading the secrets when its turn comes. */
  private sealed = '';
  private sealing: Promise<void> = Promise.resolve();

  /** `owner`: this window's id; the bridge writes its catalog section under it. */
  constructor(cliPath: string, configFile: string, secrets: ServerSecrets, log: vscode.LogOutputChannel, owner: string) {
    this.cliPath = cliPath;
    this.configFile = configFile;
    this.secrets = secrets;
    this.log = log;
    this.owner = owner;
    this.secretsFile = join(dirname(configFile), SECRETS_FILE_NAME);
  }

  /**
   * Writes the bridge's configuration and sealed secrets (the running bridge applies what it can
   * of them); tells VS Code to restart the bridge when a key it cannot apply (or, without a
   * token key, a secret) changed, and returns those keys then.
   */
  async update(config: Config): Promise<string[] | undefined> {
    const text = `${JSON.stringify(config, null, 2)}\n`;
    // Owner-only, like the state dir: it names the servers, their commands and the state dir.
    await ensurePrivateDirAsync(dirname(this.configFile));
    const key = await this.tokenKey?.();
    if (key) await this.writeSecrets(key);
    if (text !== this.written) await writePrivateFile(this.configFile, text);
    const applied = this.written !== '' && text !== this.written;
    this.written = text;
    const secrets = JSON.stringify(await this.secrets.all());
    // With the sealed file the running bridge reads secrets itself: only without it do they restart it.
    const hashed = createHash('sha256').update(restartKey(config));
    const hash = (key ? hashed : hashed.update(secrets)).digest('hex').slice(0, 12);
    const version = this.restarts > 0 ? `${hash}.${this.restarts}` : hash;
    const before = this.started;
    if (version === this.version) {
      if (applied) this.log.info('bridge configuration changed; the running bridge applies it (its sessions keep their state)');
      return undefined;
    }
    const first = this.version === '';
    this.version = version;
    this.started = { config, secrets };
    if (first || !before) return undefined;
    const keys = [...restartReasons(before.config, config), ...(secrets !== before.secrets ? ['a server secret'] : [])];
    this.log.info(`bridge configuration changed (${keys.join(', ')}; version ${version}); VS Code restarts the server`);
    // Read by the next bridge: its sessions' first runs say why their state is gone.
    await noteRestart(config.stateDir, this.owner, keys).catch((error: Error) => this.log.warn(`restart not noted: ${error.message}`));
    this.changed.fire();
    return keys;
  }

  /** Has VS Code restart the bridge (after a sign-out: no session keeps the old tokens). */
  restart(): void {
    this.restarts++;
    this.version = `${this.version.split('.')[0]}.${this.restarts}`;
    this.log.info(`bridge restarted (version ${this.version})`);
    this.changed.fire();
  }

  provideMcpServerDefinitions(): vscode.McpStdioServerDefinition[] {
    return [this.definition({})];
  }

  async resolveMcpServerDefinition(server: vscode.McpStdioServerDefinition): Promise<vscode.McpStdioServerDefinition> {
    const key = await this.tokenKey?.();
    this.log.info(`starting the bridge (version ${this.version})`);
    if (key) {
      // Written again whatever it held: the bridge's start must find it.
      await this.writeSecrets(key, true);
      return this.definition({ [SECRETS_FILE_ENV]: this.secretsFile, [TOKEN_KEY_ENV]: key });
    }
    const secrets = await this.secrets.all();
    return Object.keys(secrets).length > 0 ? this.definition({ [SECRETS_ENV]: JSON.stringify(secrets) }) : server;
  }

  /** Seals the current secrets into the bridge's secrets file when they differ from what it holds (or `always`). */
  private writeSecrets(key: string, always = false): Promise<void> {
    const write = async () => {
      const secrets: Secrets = await this.secrets.all();
      const text = JSON.stringify(secrets);
      if (text === this.sealed && !always) return;
      await ensurePrivateDirAsync(dirname(this.secretsFile));
      await writeSecretsFile(this.secretsFile, secrets, Buffer.from(key, 'base64'));
      this.sealed = text;
    };
    this.sealing = this.sealing
      .then(write)
      .catch((error: Error) =>
        this.log.error(`server secrets not written to ${this.secretsFile}: ${error.message}; the bridge keeps the secrets it has`),
      );
    return this.sealing;
  }

  private definition(extraEnv: Record<string, string>): vscode.McpStdioServerDefinition {
    // process.execPath is Electron on desktop VS Code: run it as plain Node. CLIENT_ENV makes
    // the bridge name this extension's commands (Prepare Sandbox Image) in the fixes it gives;
    // OWNER_ENV keeps its catalog apart from other windows' bridges.
    return new vscode.McpStdioServerDefinition(
      SERVER_LABEL,
      process.execPath,
      [this.cliPath, '--config', this.configFile],
      { ELECTRON_RUN_AS_NODE: '1', [CLIENT_ENV]: 'vscode', [OWNER_ENV]: this.owner, ...extraEnv },
      this.version,
    );
  }

  dispose(): void {
    this.changed.dispose();
  }
}
