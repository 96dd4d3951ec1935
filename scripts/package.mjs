// `npm run package [-- --target PLATFORM]`: builds the .vsix for one platform (this one by
// default), as VS Code installs it per platform: the bundles, their Python, the docs, and the
// WebAssembly sandbox's runtime (Pyodide, and the platform's Deno binary, which the `deno`
// package installs only for the platform npm ran on). Another platform's binary comes with
// `npm install --no-save --force @deno/<package>@<version>` first (the script says which).
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const require = createRequire(import.meta.url);
const args = process.argv.slice(2);
const given = args.includes('--target') ? args[args.indexOf('--target') + 1] : undefined;
const target = given ?? `${process.platform}-${process.arch}`;
// VS Code's platform names, and the npm package of Deno's binary for each.
const DENO = {
  'linux-x64': '@deno/linux-x64-glibc',
  'linux-arm64': '@deno/linux-arm64-glibc',
  'darwin-x64': '@deno/darwin-x64',
  'darwin-arm64': '@deno/darwin-arm64',
  'win32-x64': '@deno/win32-x64',
  'win32-arm64': '@deno/win32-arm64',
};
const denoPackage = DENO[target];
if (!denoPackage) {
  console.error(`package: no WebAssembly runtime for ${target}; the targets are ${Object.keys(DENO).join(', ')}`);
  process.exit(2);
}
let denoDir;
try {
  denoDir = dirname(require.resolve(`${denoPackage}/package.json`));
} catch {
  const version = JSON.parse(readFileSync(join(dirname(require.resolve('deno/package.json')), 'package.json'), 'utf8')).version;
  console.error(`package: ${denoPackage} is not installed; get it with: npm install --no-save --force ${denoPackage}@${version}`);
  process.exit(2);
}

// Packaged from a folder of its own: the manifest, what .vscodeignore lets in, and a production
// build. dist/ (the development build the tests and the CLI run) is left as it is.
const stage = mkdtempSync(join(tmpdir(), 'cem-package-'));
try {
  const shipped = ['package.json', '.vscodeignore', 'README.md', 'LICENSE', 'CHANGELOG.md', 'media', 'images', 'docs'];
  for (const item of shipped) cpSync(item, join(stage, item), { recursive: true });
  const dist = join(stage, 'dist');
  execFileSync(process.execPath, ['esbuild.mjs', '--production', '--outdir', dist], { stdio: 'inherit' });

  // Pyodide: what loading it reads (no console pages, maps or type declarations).
  const pyodide = dirname(require.resolve('pyodide/package.json'));
  mkdirSync(join(dist, 'pyodide'), { recursive: true });
  for (const name of ['package.json', 'pyodide.mjs', 'pyodide.asm.mjs', 'pyodide.asm.wasm', 'python_stdlib.zip', 'pyodide-lock.json']) {
    if (!existsSync(join(pyodide, name))) throw new Error(`package: ${name} is missing from the pyodide package`);
    copyFileSync(join(pyodide, name), join(dist, 'pyodide', name));
  }
  const binary = target.startsWith('win32') ? 'deno.exe' : 'deno';
  mkdirSync(join(dist, 'deno'), { recursive: true });
  cpSync(join(denoDir, binary), join(dist, 'deno', binary));
  chmodSync(join(dist, 'deno', binary), 0o755);

  mkdirSync('dist-vsix', { recursive: true });
  const out = resolve('dist-vsix/code-execution-mode.vsix');
  execFileSync(
    process.execPath,
    [
      join(dirname(require.resolve('@vscode/vsce/package.json')), 'vsce'),
      'package',
      '--no-dependencies',
      '--allow-missing-repository',
      '--no-rewrite-relative-links',
      '--target',
      target,
      '--out',
      out,
    ],
    { stdio: 'inherit', cwd: stage },
  );
} finally {
  rmSync(stage, { recursive: true, force: true });
}
