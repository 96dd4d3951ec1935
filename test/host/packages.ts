// Host check of sandbox.packages, run by suite.ts in the real VS Code: with a base image that has
// pip and a package served by a PEP 503 index on 127.0.0.1, set in the USER settings (a
// workspace's packages wait for consent), the status bar and Diagnose say the packages are not
// built; "Build Sandbox Image" (the command, as the palette runs it) builds the derived image;
// then run_python imports the package in a new session. The derived image is removed afterwards.
import { execFileSync } from 'node:child_process';
import * as vscode from 'vscode';
import type { ExtensionApi } from '../../src/extension/extension.ts';
import { servePipIndex, type PipIndex } from '../helpers/pip-index.ts';
import type { HostKit } from './consent.ts';

type Invoke = (code: string, extra?: Record<string, unknown>) => Promise<string>;

export async function packagesChecks(kit: HostKit, ext: ExtensionApi, invoke: Invoke, userImage: string): Promise<void> {
  const { check, waitFor, startBridge } = kit;
  const assert: HostKit['assert'] = kit.assert;
  const settings = vscode.workspace.getConfiguration('codeExecutionMode');
  const runtime = process.env.CEM_HOST_RUNTIME ?? 'podman';
  const dataImage = process.env.CEM_TEST_DATA_IMAGE ?? 'localhost/cem-sandbox-data:bookworm';
  let index: PipIndex | undefined;
  let tag: string | undefined;
  try {
    await check('packages: set in the user settings, the status bar and Diagnose say they are not built', async () => {
      try {
        execFileSync(runtime, ['image', 'inspect', '--format', '{{.Id}}', dataImage], { stdio: 'ignore' });
      } catch {
        assert(false, `${dataImage} (a base image with pip) is not present in ${runtime}`);
      }
      index = await servePipIndex({ 'cem-hostpkg': { version: '1.0', value: 'built in VS Code' } });
      await settings.update('sandbox.image', dataImage, vscode.ConfigurationTarget.Global);
      await settings.update('sandbox.pipIndexUrl', index.url, vscode.ConfigurationTarget.Global);
      await settings.update('sandbox.packages', ['cem-hostpkg'], vscode.ConfigurationTarget.Global);
      // User settings apply without a consent question (a workspace's would wait for one).
      await waitFor(
        'the packages in the bridge config',
        () => (ext.config().sandbox.packages.join() === 'cem-hostpkg' ? true : undefined),
        10_000,
      );
      // "stale" when an image of an earlier list (another run's index URL) is still there.
      await waitFor(
        'the status bar to say packages not built',
        () => (/packages (not built|stale)/.test(ext.runtime.text) ? true : undefined),
        60_000,
      ).catch(() => assert(false, `status bar: ${ext.runtime.text}`));
      await vscode.commands.executeCommand('codeExecutionMode.diagnoseRuntime');
      const panel = await waitFor(
        'the report with the packages check',
        () => {
          const open = ext.diagnosePanel();
          return open?.report?.image === dataImage && open.report.chosen?.packages ? open : undefined;
        },
        60_000,
      );
      const packages = panel.report!.chosen!.packages!;
      assert(packages.state === 'missing', `packages: ${JSON.stringify(packages)}`);
      tag = packages.tag;
      // Said "stale" when package images of other lists on this base are there (an integration
      // file may build on the same image at the same time).
      const packagesCheck = panel.report!.chosen!.checks.find((c) => c.name === 'packages');
      assert(
        packagesCheck?.ok === false && /cem-hostpkg: (not built|stale)/.test(packagesCheck.detail),
        `check: ${JSON.stringify(packagesCheck)}`,
      );
      assert(panel.html.includes('data-check="packages" data-result="failed"'), 'the report does not show the packages check as failed');
    });

    await check('packages: "Build Sandbox Image" builds the image from the loopback index; run_python imports the package', async () => {
      assert(tag, 'no derived image tag from the check');
      const outcome = await vscode.commands.executeCommand<string>('codeExecutionMode.buildImage');
      assert(outcome === 'built', `build outcome: ${outcome}`);
      assert(
        index!.requests.some((p) => p.startsWith('/simple/cem-hostpkg')) && index!.requests.some((p) => p.startsWith('/files/')),
        `index requests: ${index!.requests.join(', ')}`,
      );
      await waitFor('the status bar to say ready', () => (ext.runtime.text.includes(': ready') ? true : undefined), 30_000).catch(() =>
        assert(false, `status bar: ${ext.runtime.text}`),
      );
      assert(
        ext.runtime.report?.chosen?.packages?.state === 'built' && ext.runtime.report.chosen.image === tag,
        `report: ${JSON.stringify(ext.runtime.report?.chosen?.packages)}`,
      );
      const out = await waitFor(
        'a new session to import the package',
        async () => {
          await startBridge();
          const text = await invoke('import cem_hostpkg\ncem_hostpkg.VALUE', { session: `packages-${Date.now()}` });
          return text.includes('built in VS Code') ? text : undefined;
        },
        90_000,
      );
      assert(!out.includes('ModuleNotFoundError'), out);
    });
  } finally {
    await settings.update('sandbox.packages', undefined, vscode.ConfigurationTarget.Global);
    await settings.update('sandbox.pipIndexUrl', undefined, vscode.ConfigurationTarget.Global);
    await settings.update('sandbox.image', userImage, vscode.ConfigurationTarget.Global);
    await index?.close();
    // Only the image this check built: the derived images of others stay.
    if (tag) {
      // The bridge restarted on the settings change stops the sessions of that image; retry while one still uses it.
      await startBridge().catch(() => undefined);
      for (let i = 0; i < 20 && imageExists(runtime, tag); i++) {
        try {
          execFileSync(runtime, ['rmi', ...(i === 19 ? ['--force'] : []), tag], { stdio: 'ignore' });
        } catch {
          await kit.sleep(1000);
        }
      }
      if (imageExists(runtime, tag))
        await check('packages: the derived image is removed afterwards', async () => assert(false, `${tag} is still present`));
    }
  }
}

function imageExists(runtime: string, image: string): boolean {
  try {
    execFileSync(runtime, ['image', 'inspect', '--format', '{{.Id}}', image], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
