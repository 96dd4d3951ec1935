// The host suite: packages the extension as users get it (.vsix), unpacks it, bundles the
// suite, and runs it in a real VS Code extension host (test/host/run.mjs).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';

const root = resolve('.');
const work = mkdtempSync(join(tmpdir(), 'cem-host-'));
try {
  execFileSync('npm', ['run', '--silent', 'package'], { stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync('unzip', ['-q', 'dist-vsix/code-execution-mode.vsix', '-d', join(work, 'vsix')]);
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
  // Leave a development build in dist/ again for the other suites.
  execFileSync(process.execPath, ['esbuild.mjs']);
  const result = spawnSync(
    process.execPath,
    // Extra arguments go to the runner, e.g. `--screenshots images` to refresh the README's.
    ['test/host/run.mjs', '--extension', join(work, 'vsix', 'extension'), '--suite', join(work, 'suite.cjs'), ...process.argv.slice(2)],
    { stdio: 'inherit', env: { ...process.env, CEM_REPO: root } },
  );
  process.exitCode = result.status ?? 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
