// Host checks that settings changes keep the agent's Python sessions: adding a server in the
// settings reaches the running bridge (a variable set before is still there, and the new
// server's tool is callable from the same session); a sandbox setting restarts the bridge, and
// the session's next result says it was reset and which setting did it (so does the Runs view).
// A changed server secret reaches the running bridge too (the sealed secrets file).
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { SECRETS_FILE_NAME } from '../../src/state/secrets-file.ts';
import type { ExtensionApi } from '../../src/extension/extension.ts';
import type { HostKit } from './consent.ts';

export async function keepSessionsChecks(kit: HostKit, ext: ExtensionApi, fixtureServer: string): Promise<void> {
  const { check, waitFor, invoke, startBridge } = kit;
  const assert: HostKit['assert'] = kit.assert;
  const settings = vscode.workspace.getConfiguration('codeExecutionMode');
  const servers = settings.get<Record<string, unknown>>('servers') ?? {};
  try {
    await check('adding a server in the settings keeps a session variable, and its tool is callable there', async () => {
      // The group before may have put its settings back just now: a restart it caused cancels a call in flight.
      await waitFor(
        'a session variable set in a settled bridge',
        async () => {
          await startBridge();
          const before = await invoke('kept = 41\nkept').catch(() => '');
          return before.includes('41') ? before : undefined;
        },
        60_000,
      );
      await settings.update(
        'servers',
        { ...servers, keepfix: { command: process.execPath, args: [fixtureServer], description: 'added while the bridge runs' } },
        vscode.ConfigurationTarget.Global,
      );
      const after = await waitFor(
        'the running bridge to apply the new server',
        async () => {
          const out = await invoke(
            'print(kept + 1)\nprint(await mcp_keepfix.echo(message="alias ok"))\nprint(await call_tool("keepfix", "echo", {"message": "call_tool ok"}))',
          );
          // The session's own variable gone means the bridge restarted: no point in waiting.
          assert(!/name 'kept' is not defined/.test(out), `the session lost its variable: ${out}`);
          // Until the bridge has read the file, the new name is not defined yet.
          return /name 'mcp_keepfix' is not defined/.test(out) ? undefined : out;
        },
        60_000,
      );
      // The model reads the text (the extension's bridge sends no structuredContent).
      assert(after === '42\nalias ok\ncall_tool ok\n[2 tool calls]', `after: ${after}`);
    });

    await check(
      'changing a server secret reaches the running bridge: the server gets the new value, the session keeps its variable',
      async () => {
        await ext.secrets.set('secretfix', 'inputs', 'token', 'first-secret-value');
        await settings.update(
          'servers',
          { ...servers, secretfix: { command: process.execPath, args: [fixtureServer], env: { CEM_TOKEN: '${input:token}' } } },
          vscode.ConfigurationTarget.Global,
        );
        const ask = 'print(await mcp_secretfix.env(name="CEM_TOKEN"))';
        await waitFor(
          'the server with its first secret, and a session variable',
          async () => {
            await startBridge();
            const out = await invoke(`kept_secret = 7\n${ask}`).catch(() => '');
            return out.includes('first-secret-value') ? out : undefined;
          },
          60_000,
        );
        const version = ext.provider.provideMcpServerDefinitions()[0]?.version;
        await ext.secrets.set('secretfix', 'inputs', 'token', 'second-secret-value');
        const after = await waitFor(
          'the running bridge to apply the new secret',
          async () => {
            const out = await invoke(`print(kept_secret)\n${ask}`);
            // The session's own variable gone means the bridge restarted: no point in waiting.
            assert(!/name 'kept_secret' is not defined/.test(out), `the session lost its variable: ${out}`);
            return out.includes('second-secret-value') ? out : undefined;
          },
          60_000,
        );
        assert(after.startsWith('7\nsecond-secret-value'), `after: ${after}`);
        assert(ext.provider.provideMcpServerDefinitions()[0]?.version === version, 'the bridge was restarted (a new version)');
        // The values are on disk only sealed, owner-only.
        const sealed = join(dirname(ext.configFile), SECRETS_FILE_NAME);
        const text = readFileSync(sealed, 'utf8');
        assert(text.startsWith('{"sealed"') && !text.includes('secret-value'), `the secrets file: ${text.slice(0, 80)}`);
        if (process.platform !== 'win32') assert((statSync(sealed).mode & 0o777) === 0o600, 'the secrets file is not 0600');
      },
    );

    await check("a sandbox setting restarts the bridge, and the session's next result says why", async () => {
      await invoke('reset_marker = 1');
      await settings.update('sandbox.memory', '384m', vscode.ConfigurationTarget.Global);
      const out = await waitFor(
        'a result from the restarted bridge',
        async () => {
          await startBridge();
          const text = await invoke('print("after the change")');
          // A reset session's result starts with the line that says so.
          return text.startsWith('[session "default" was reset: ') ? text : undefined;
        },
        120_000,
      );
      assert(out.includes('sandbox.memory') && out.endsWith('\nafter the change'), `result: ${out}`);
      const run = await waitFor('the run in the Runs view', () =>
        ext.runs.runs().find((r) => r.code.includes('after the change') && r.sessionChange),
      );
      const tooltip = ext.runs.getTreeItem({ kind: 'run', run }).tooltip as vscode.MarkdownString;
      assert(tooltip.value.includes('sandbox.memory'), `tooltip: ${tooltip.value}`);
    });
  } finally {
    await settings.update('servers', servers, vscode.ConfigurationTarget.Global);
    await settings.update('sandbox.memory', undefined, vscode.ConfigurationTarget.Global);
    await ext.secrets.removeServer('secretfix');
  }
}
