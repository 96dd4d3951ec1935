// Host checks of OAuth for a proxied HTTP server, run by suite.ts in the real VS Code: the
// protected fixture (test/fixtures/oauth-server.ts) is added in the settings; a run that calls
// it makes the bridge ask for a sign-in; the notification "Sign in to <server>" is clicked in
// the workbench, VS Code opens the authorization URL in the browser, the browser comes back to
// the bridge's loopback callback, and the run completes. The token file is sealed with the key
// from SecretStorage; Sign Out of Server deletes it.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import * as vscode from 'vscode';
import type { ExtensionApi } from '../../src/extension/extension.ts';
import type { HostKit } from './consent.ts';
import { fixtureProgram } from '../helpers/fixtures.ts';

/** The page actions of suite.ts (see test/host/run.mjs). */
type Ui = (steps: Array<{ waitFor: string; text?: string } | { click: string; text?: string }>) => Promise<void>;

async function startFixture(repo: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [fixtureProgram('oauth', repo)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((ok, fail) => {
    createInterface({ input: child.stdout }).once('line', (line) => ok(line.trim()));
    child.once('exit', (code) => fail(new Error(`oauth fixture exited (${code})`)));
  });
  return { url, child };
}

export async function oauthChecks(kit: HostKit, ext: ExtensionApi, repo: string, ui: Ui): Promise<void> {
  const { check, waitFor } = kit;
  const settings = vscode.workspace.getConfiguration('codeExecutionMode');
  let fixture: { url: string; child: ChildProcess } | undefined;
  const tokenPath = join(ext.stateDir, 'oauth', 'secure.json');
  try {
    await check('OAuth: the sign-in notification opens the browser, which comes back to the bridge; the run completes', async () => {
      fixture = await startFixture(repo);
      const servers = settings.get<Record<string, unknown>>('servers') ?? {};
      await settings.update(
        'servers',
        { ...servers, secure: { type: 'http', url: fixture.url, description: 'Protected fixture' } },
        vscode.ConfigurationTarget.Global,
      );
      await waitFor(
        'the server in the bridge config',
        () => (Object.keys(ext.config().servers).includes('secure') ? true : undefined),
        10_000,
      );
      // The running bridge applies the new list itself: until it has, mcp_secure is not defined.
      await waitFor(
        'the bridge to know the server',
        async () => {
          await kit.startBridge();
          const out = await kit.invoke('sorted(s["name"] for s in discovered_servers())').catch(() => '');
          return out.includes("'secure'") ? true : undefined;
        },
        60_000,
      );
      const pending = kit.invoke("await mcp_secure.echo(message='signed in from VS Code')");
      // The bridge's request, as the extension reads it.
      await waitFor('the sign-in request', () => readdirSync(ext.stateDir).find((f) => /^sign-in\..+\.json$/.test(f)), 60_000);
      await vscode.commands.executeCommand('notifications.showList');
      await ui([
        { waitFor: '.notifications-center .notification-list-item', text: 'Sign in to secure' },
        { click: '.notifications-center .monaco-button', text: 'Sign In' },
      ]);
      await vscode.commands.executeCommand('notifications.hideList');
      const text = await pending;
      kit.assert(text.includes('protected: signed in from VS Code'), `result: ${text}`);
    });

    await check('OAuth: the token file is owner-only and sealed (key in SecretStorage); nothing of it in the run log', async () => {
      kit.assert((statSync(tokenPath).mode & 0o777) === 0o600, `mode ${(statSync(tokenPath).mode & 0o777).toString(8)}`);
      kit.assert(readFileSync(tokenPath, 'utf8').startsWith('{"sealed":"aes-256-gcm"'), 'the token file is not sealed');
      const tokens = (await (await fetch(new URL('/test/tokens', fixture!.url))).json()) as { access: string[] };
      const log = readFileSync(join(ext.stateDir, 'runs.jsonl'), 'utf8');
      kit.assert(tokens.access.length > 0 && !tokens.access.some((t) => log.includes(t)), 'a token is in the run log');
    });

    await check('OAuth: Sign Out of Server deletes the tokens and restarts the bridge', async () => {
      await vscode.commands.executeCommand('codeExecutionMode.signOut', 'secure');
      await waitFor(
        'the token file to go',
        () => {
          try {
            statSync(tokenPath);
            return undefined;
          } catch {
            return true;
          }
        },
        10_000,
      );
    });
  } finally {
    fixture?.child.kill();
    const servers = { ...(settings.get<Record<string, unknown>>('servers') ?? {}) };
    delete servers.secure;
    await settings.update('servers', servers, vscode.ConfigurationTarget.Global);
  }
}
