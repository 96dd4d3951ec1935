// Host checks of workspace consent, run by suite.ts in the real VS Code: a server defined in the
// workspace's settings leaves its pid in a marker file when it starts. No marker after a search
// until the user allows it (the question answered through the API, as the dialog would be);
// allowed, it starts in the same bridge (a session variable survives); its definition changed,
// it is asked about again; revoked, its process stops and calls are refused. The question shows
// plain env values and masks secret ones. A workspace sandbox.image and sandbox limits wait too,
// and user-scope servers are never asked about.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { ConsentAnswer } from '../../src/extension/settings/consent.ts';
import type { ExtensionApi } from '../../src/extension/extension.ts';

export interface HostKit {
  check(name: string, fn: () => Promise<void>): Promise<void>;
  assert(condition: unknown, message: string): asserts condition;
  waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs?: number): Promise<T>;
  invoke(code: string, extra?: Record<string, unknown>, timeoutMs?: number): Promise<string>;
  startBridge(): Promise<void>;
  sleep(ms: number): Promise<unknown>;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// Search, discovery and a call, as an agent's first run would make them.
const PROBE = [
  'hit = "wsfix" in {h["server"] for h in await search_tool_docs("add two numbers", limit=20)}',
  'status = {s["name"]: s["status"] for s in discovered_servers()}.get("wsfix")',
  'try:',
  '    kind = ("called", await mcp_wsfix.add(a=2, b=2))',
  'except ToolError as e:',
  '    kind = e.kind',
  '(hit, status, kind)',
].join('\n');

export async function consentChecks(kit: HostKit, ext: ExtensionApi, fixtureServer: string, userImage: string): Promise<void> {
  const { check, waitFor, invoke, startBridge, sleep } = kit;
  const assert: HostKit['assert'] = kit.assert;
  const settings = vscode.workspace.getConfiguration('codeExecutionMode');
  const dir = mkdtempSync(join(tmpdir(), 'cem-consent-'));
  const marker = join(dir, 'wsfix.pid');
  const answers: ConsentAnswer[] = [];
  ext.consent.setResponder(async () => answers.shift() ?? 'dismiss');
  const questions = () => ext.consent.questions;
  const wsfix = (...extra: string[]) => ({
    wsfix: {
      command: process.execPath,
      args: [fixtureServer, ...extra],
      env: { FIXTURE_PID_FILE: marker, WSFIX_TOKEN: 'host-secret-value' },
      description: 'Workspace fixture',
    },
  });
  const hashOf = () => ext.config().consent?.servers.wsfix;
  /** Runs PROBE in the bridge that knows the current definition (VS Code restarts it on a change). */
  const probe = (expect: (out: string) => boolean, what: string) =>
    waitFor(
      what,
      async () => {
        await startBridge();
        const out = await invoke(PROBE);
        return expect(out) ? out : undefined;
      },
      90_000,
    );

  try {
    await check(
      'a server from the workspace settings: not started by a search, a call says needs-consent, and ONE question shows what would run',
      async () => {
        const before = questions().length;
        await settings.update('servers', wsfix(), vscode.ConfigurationTarget.Workspace);
        await waitFor('the workspace server to be gated', () => hashOf(), 10_000);
        const out = await probe(
          (o) => o.includes("(False, 'awaiting-consent', 'needs-consent')"),
          'the bridge to know the workspace server',
        );
        assert(out.includes('needs-consent'), out);
        await sleep(1500);
        assert(!existsSync(marker), 'the workspace server was started without consent');
        const question = await waitFor('the question', () => questions()[before], 15_000);
        assert(
          question.items.length === 1 && question.items[0]?.name === 'wsfix',
          `items: ${question.items.map((i) => i.name).join(', ')}`,
        );
        const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '';
        assert(question.detail.includes(join(folder, '.vscode', 'settings.json')), `where is not said: ${question.detail}`);
        assert(question.detail.includes(`command: ${process.execPath}`) && question.detail.includes(fixtureServer), question.detail);
        assert(question.detail.includes(`env FIXTURE_PID_FILE=${marker}`), `a plain environment value is not shown: ${question.detail}`);
        assert(question.detail.includes('env WSFIX_TOKEN=*** (secret, not shown)'), question.detail);
        assert(!question.detail.includes('host-secret-value'), 'a secret environment value reached the question');
        // Searching again while the question was closed unanswered asks nothing more.
        await invoke(PROBE);
        await sleep(1000);
        assert(questions().length === before + 1, `asked ${questions().length - before} times`);
        const node = ext.tools.servers().find((s) => s.name === 'wsfix');
        assert(node && node.state === 'awaiting-consent', `Tools view: ${node?.state}`);
        const item = ext.tools.getTreeItem(node);
        assert(
          item.command?.command === 'codeExecutionMode.reviewConsent' && String(item.description).includes('Review'),
          `tree item: ${String(item.description)}`,
        );
      },
    );

    await check('allowed through Review…, it starts in the same bridge (its session survives)', async () => {
      await invoke('consent_probe = 7');
      answers.push('allow');
      await vscode.commands.executeCommand('codeExecutionMode.reviewConsent', 'wsfix');
      assert(ext.consent.decision(hashOf() ?? '') === 'allowed', 'not recorded as allowed');
      const out = await invoke('(consent_probe, await mcp_wsfix.add(a=20, b=22))');
      assert(out.includes("(7, {'sum': 42})"), out);
      assert(existsSync(marker), 'the allowed server did not start');
      await waitFor(
        'the Tools view to drop "awaiting consent"',
        () => (ext.tools.servers().find((s) => s.name === 'wsfix')?.state !== 'awaiting-consent' ? true : undefined),
        10_000,
      );
    });

    await check('its definition changed: it is asked about again when the bridge needs it', async () => {
      const before = questions().length;
      const oldHash = hashOf();
      rmSync(marker, { force: true });
      answers.push('allow');
      await settings.update('servers', wsfix('--say', 'changed definition'), vscode.ConfigurationTarget.Workspace);
      await waitFor('a new hash', () => (hashOf() && hashOf() !== oldHash ? true : undefined), 10_000);
      // The first probe asks (the answer allows); a later one calls it.
      // The old bridge (and its allowed server) may answer until VS Code restarts it: the new
      // definition's process is the one that writes the marker.
      const out = await probe(
        (o) => o.includes("('called', {'sum': 4})") && existsSync(marker) && questions().length > before,
        'the changed server to be asked about and allowed',
      );
      const question = questions()[before];
      assert(question?.items[0]?.name === 'wsfix', `questions: ${questions().length - before}`);
      assert(question.detail.includes('--say "changed definition"'), question.detail);
      assert(existsSync(marker), out);
    });

    await check('revoked (as Manage Server Consent does), its process stops and calls are refused', async () => {
      const pid = Number(readFileSync(marker, 'utf8'));
      assert(alive(pid), 'the server is not running');
      await ext.consent.revoke([hashOf() ?? '']);
      await waitFor('the revoked server to stop', () => (!alive(pid) ? true : undefined), 15_000);
      const out = await invoke(PROBE);
      assert(out.includes("(False, 'awaiting-consent', 'needs-consent')"), out);
      await waitFor(
        'the Tools view to say awaiting consent',
        () => (ext.tools.servers().find((s) => s.name === 'wsfix')?.state === 'awaiting-consent' ? true : undefined),
        10_000,
      );
    });

    await check('a workspace sandbox.image waits for consent: your own image is used and the Tools view says so', async () => {
      await settings.update('sandbox.image', 'localhost/cem-workspace:none', vscode.ConfigurationTarget.Workspace);
      const note = await waitFor(
        'the note',
        () => ext.tools.getChildren().find((n) => n.kind === 'note' && n.text.includes('sandbox.image')),
        10_000,
      );
      assert(note.kind === 'note' && note.review, 'the note has no Review action');
      assert(ext.config().sandbox.image === userImage, `image in use: ${ext.config().sandbox.image}`);
      await settings.update('sandbox.image', undefined, vscode.ConfigurationTarget.Workspace);
    });

    await check('workspace sandbox limits (memory, pids, maxSessions) wait for consent: your own values are used', async () => {
      const own = ext.config().sandbox;
      await settings.update('sandbox.memory', '8g', vscode.ConfigurationTarget.Workspace);
      await settings.update('sandbox.pids', 100000, vscode.ConfigurationTarget.Workspace);
      await settings.update('sandbox.maxSessions', 64, vscode.ConfigurationTarget.Workspace);
      try {
        for (const key of ['memory', 'pids', 'maxSessions']) {
          await waitFor(
            `the note for sandbox.${key}`,
            () => ext.tools.getChildren().find((n) => n.kind === 'note' && n.text.includes(`sandbox.${key} `)),
            10_000,
          );
        }
        const now = ext.config().sandbox;
        assert(
          now.memory === own.memory && now.pids === own.pids && now.maxSessions === own.maxSessions,
          `limits in use: ${now.memory} ${now.pids} ${now.maxSessions}`,
        );
      } finally {
        for (const key of ['memory', 'pids', 'maxSessions'])
          await settings.update(`sandbox.${key}`, undefined, vscode.ConfigurationTarget.Workspace);
      }
    });

    await check('a workspace sandbox.workspaceAccess waits for consent; your own mounts the first folder at /workspace', async () => {
      await settings.update('sandbox.workspaceAccess', 'read-only', vscode.ConfigurationTarget.Workspace);
      await waitFor(
        'the note',
        () => ext.tools.getChildren().find((n) => n.kind === 'note' && n.text.includes('sandbox.workspaceAccess')),
        10_000,
      );
      assert(ext.config().sandbox.workspace === undefined, `mounted before consent: ${JSON.stringify(ext.config().sandbox.workspace)}`);
      await settings.update('sandbox.workspaceAccess', undefined, vscode.ConfigurationTarget.Workspace);
      await settings.update('sandbox.workspaceAccess', 'read-only', vscode.ConfigurationTarget.Global);
      try {
        const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
        await waitFor('the mount in the configuration', () => (ext.config().sandbox.workspace?.path === folder ? true : undefined), 10_000);
        await waitFor(
          '/workspace in the sandbox',
          async () => {
            await startBridge();
            return (await invoke('import os\nos.path.isdir("/workspace")')).includes('True') ? true : undefined;
          },
          60_000,
        );
      } finally {
        await settings.update('sandbox.workspaceAccess', undefined, vscode.ConfigurationTarget.Global);
      }
    });

    await check('user-scope servers are never asked about', async () => {
      const asked = new Set(questions().flatMap((q) => q.items.map((i) => i.name)));
      assert(
        [...asked].every((name) => name === 'wsfix'),
        `asked about: ${[...asked].join(', ')}`,
      );
      const gated = Object.keys(ext.config().consent?.servers ?? {});
      assert(gated.length === 1 && gated[0] === 'wsfix', `gated: ${gated.join(', ')}`);
    });
  } finally {
    ext.consent.setResponder(undefined);
    await settings.update('servers', undefined, vscode.ConfigurationTarget.Workspace);
    rmSync(dir, { recursive: true, force: true });
  }
}
