// The host suite: packages the extension as users get it (.vsix), unpacks it, bundles the
// suite, and runs it in a real VS Code extension host (test/host/run.mjs). test/run.mjs imports
// the two steps, so that the host suite runs beside the integration suites once packaged.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

/** Runs a step of the preparation, its errors on our stderr; rejects when it fails. */
function step(command, args) {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  return new Promise((done, fail) => {
    child.on('error', fail);
    child.on('close', (code) => (code === 0 ? done() : fail(new Error(`${command} ${args.join(' ')} exited with ${code}`))));
  });
}

/**
 * Packages and unpacks the extension and bundles the suite into a folder of its own; packaging
 * leaves dist/ as it is, so the other suites run beside this. Returns the folder (remove it after
 * the run).
 */
export async function prepareHostSuite() {
  const work = mkdtempSync(join(tmpdir(), 'cem-host-'));
  try {
    await step('npm', ['run', '--silent', 'package']);
    await step('unzip', ['-q', 'dist-vsix/code-execution-mode.vsix', '-d', join(work, 'vsix')]);
    await build({
      entryPoints: ['test/host/suite.ts'],
      bundle: true,
      platform: 'node',
      target: 'node22',
      format: 'cjs',
      external: ['vscode'],
      outfile: join(work, 'suite.cjs'),
      logLevel: 'warning',
    });
    return work;
  } catch (error) {
    rmSync(work, { recursive: true, force: true });
    throw error;
  }
}

/** Runs the prepared suite in a VS Code extension host; resolves to its exit status. */
export function runHostSuite(work, extraArgs = []) {
  // Extra arguments go to the runner, e.g. `--screenshots images` to refresh the README's.
  const args = ['test/host/run.mjs', '--extension', join(work, 'vsix', 'extension'), '--suite', join(work, 'suite.cjs'), ...extraArgs];
  const child = spawn(process.execPath, args, { stdio: 'inherit', env: { ...process.env, CEM_REPO: resolve('.') } });
  return new Promise((done) => {
    child.on('error', () => done(1));
    child.on('close', (code) => done(code ?? 1));
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const work = await prepareHostSuite();
  try {
    process.exitCode = await runHostSuite(work, process.argv.slice(2));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
