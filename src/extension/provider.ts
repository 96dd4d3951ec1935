// Gives VS Code the bundled bridge as an MCP stdio server, so agent mode sees run_python with
// no mcp.json. The configuration goes by file (no secrets in it); secrets are added only at
// start time, in the process environment. The running bridge applies changes of the servers,
// proxy and result settings from the file itself (its sessions keep their state); only a change
// that needs a new sandbox or bridge bumps the version, so that VS Code restarts it.
import { createHash } from 'node:crypto';
import { dirname } from 'node:path';
import * as vscode from 'vscode';
import { OWNER_ENV } from '../state/catalog-file.ts';
import { noteRestart } from '../state/bridge-restarts.ts';
import { ensurePrivateDirAsync, writePrivateFile } from '../state/private-files.ts';
import { CLIENT_ENV } from '../bridge/server.ts';
import type { Config } from '../config/schema.ts';
import { restartKey, restartReasons } from '../config/restart-keys.ts';
import { SECRETS_ENV } from '../config/secrets.ts';
import { TOKEN_KEY_ENV } from '../state/oauth-tokens.ts';
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

  /** `owner`: this window's id; the bridge writes its catalog section under it. */
  constructor(cliPath: string, configFile: string, secrets: ServerSecrets, log: vscode.LogOutputChannel, owner: string) {
    this.cliPath = cliPath;
    this.configFile = configFile;
    this.secrets = secrets;
    this.log = log;
    this.owner = owner;
  }

  /**
   * Writes the bridge's configuration (the running bridge applies what it can of it); tells
   * VS Code to restart the bridge when a key it cannot apply (or a secret) changed, and returns
   * those keys then.
   */
  async update(config: Config): Promise<string[] | undefined> {
    const text = `${JSON.stringify(config, null, 2)}\n`;
    // Owner-only, like the state dir: it names the servers, their commands and the state dir.
    await ensurePrivateDirAsync(dirname(this.configFile));
    if (text !== this.written) await writePrivateFile(this.configFile, text);
    const applied = this.written !== '' && text !== this.written;
    this.written = text;
    const secrets = JSON.stringify(await this.secrets.all());
    const hash = createHash('sha256').update(restartKey(config)).update(secrets).digest('hex').slice(0, 12);
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
    const secrets = await this.secrets.all();
    const key = await this.tokenKey?.();
    this.log.info(`starting the bridge (version ${this.version})`);
    const env = {
      ...(Object.keys(secrets).length > 0 ? { [SECRETS_ENV]: JSON.stringify(secrets) } : {}),
      ...(key ? { [TOKEN_KEY_ENV]: key } : {}),
    };
    return Object.keys(env).length > 0 ? this.definition(env) : server;
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
