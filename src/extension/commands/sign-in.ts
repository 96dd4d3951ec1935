// OAuth sign-ins for proxied servers, on VS Code's side. The bridge is another process: when a
// server needs a sign-in it writes the request to `<stateDir>/sign-in.<window>.json`; this
// watches that file, asks "Sign in to <server>" and opens the authorization URL in the browser
// only when the person clicks (the browser comes back to the bridge's loopback callback).
// Token files are sealed with a key kept in SecretStorage (token-key.ts) and given to the
// bridge in its environment at start. Sign Out deletes a server's token file and restarts the bridge.
import { join } from 'node:path';
import * as vscode from 'vscode';
import { newSignInRequests, openableSignInUrl, signInFileName, type SignInNotice } from '../../state/sign-in-notices.ts';
import { signOut } from '../../bridge/proxy/oauth/sign-out.ts';
import { DirWatcher } from '../dir-watcher.ts';

export class SignInPrompts implements vscode.Disposable {
  private readonly file: string | undefined;
  private readonly watcher: DirWatcher | undefined;
  private readonly shown = new Set<string>();
  private readonly log: vscode.LogOutputChannel;

  constructor(stateDir: string, owner: string, log: vscode.LogOutputChannel) {
    this.log = log;
    const name = signInFileName(owner);
    this.file = name ? join(stateDir, name) : undefined;
    this.watcher = name ? new DirWatcher(stateDir, (changed) => (changed === null || changed === name) && this.check()) : undefined;
    this.check();
  }

  private check(): void {
    if (!this.file) return;
    for (const request of newSignInRequests(this.file, this.shown)) void this.ask(request);
  }

  private async ask(request: SignInNotice): Promise<void> {
    const url = openableSignInUrl(request.url);
    if (!url) return;
    this.log.info(`server ${request.server} asks for a sign-in at ${url.host}`);
    const choice = await vscode.window.showInformationMessage(
      `Sign in to ${request.server}: the server asks you to sign in at ${url.host} before the agent can use it.`,
      'Sign In',
    );
    if (choice !== 'Sign In') return;
    if (request.expiresAt < Date.now()) {
      void vscode.window.showWarningMessage(
        `The sign-in to ${request.server} has expired; it is asked again when the server is next used.`,
      );
      return;
    }
    // Given as the string: VS Code opens it as written, where a parsed Uri would re-encode the query.
    await vscode.env.openExternal(url.href as unknown as vscode.Uri);
  }

  dispose(): void {
    this.watcher?.dispose();
  }
}

/** "Sign Out of Server": deletes the server's tokens; `restart` then stops the sessions opened with them. */
export async function signOutCommand(
  stateDir: string,
  servers: readonly string[],
  arg: unknown,
  restart: () => Promise<void>,
): Promise<void> {
  const given =
    typeof arg === 'string' ? arg : arg && typeof arg === 'object' && 'name' in arg && typeof arg.name === 'string' ? arg.name : undefined;
  const server = given ?? (await vscode.window.showQuickPick([...servers], { placeHolder: 'Sign out of which server?' }));
  if (!server) return;
  const existed = await signOut(stateDir, server);
  await restart();
  void vscode.window.showInformationMessage(
    existed ? `Signed out of ${server}: its tokens are deleted.` : `No sign-in is stored for ${server}.`,
  );
}
