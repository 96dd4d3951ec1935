// Bundles the standalone bridge CLI (ESM) and the VS Code extension (CommonJS, as VS Code
// loads it) into dist/ (or `--outdir DIR`), and copies the Python sources the bundles read beside them.
import { build } from 'esbuild';
import { chmod, copyFile, cp, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';

const production = process.argv.includes('--production');
const at = process.argv.indexOf('--outdir');
const dist = at >= 0 ? process.argv[at + 1] : 'dist';
if (!dist) throw new Error('esbuild.mjs: --outdir needs a folder');
await mkdir(dist, { recursive: true });

const common = {
  bundle: true,
  platform: 'node',
  target: 'node22',
  sourcemap: production ? false : 'linked',
  minify: production,
  legalComments: 'none',
  logLevel: 'warning',
};

await Promise.all([
  build({
    ...common,
    entryPoints: { 'cli-main': 'src/cli/cli.ts' },
    outdir: dist,
    format: 'esm',
    banner: {
      js: "import { createRequire as __cemRequire } from 'node:module'; const require = __cemRequire(import.meta.url);",
    },
  }),
  // The executable: a version check that loads cli-main.js only on a Node it runs on.
  build({
    ...common,
    entryPoints: { cli: 'src/cli/bin.ts' },
    outdir: dist,
    format: 'esm',
    target: 'node14',
    external: ['./cli-main.js'],
    banner: { js: '#!/usr/bin/env node' },
  }),
  build({
    ...common,
    entryPoints: { extension: 'src/extension/extension.ts' },
    outdir: dist,
    outExtension: { '.js': '.cjs' },
    format: 'cjs',
    external: ['vscode'],
    // Prefer ES builds: UMD builds (jsonc-parser's) hide their requires from the bundler.
    mainFields: ['module', 'main'],
    // Modules locate their Python files with import.meta.url; give the CommonJS bundle one.
    define: { 'import.meta.url': '__cemImportMetaUrl' },
    banner: { js: "const __cemImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  }),
]);
// The kernel's Python files (kernel/source.ts reads them beside the bundle), all of them.
for (const name of await readdir('src/sandbox/container/kernel')) {
  if (name.endsWith('.py')) await copyFile(`src/sandbox/container/kernel/${name}`, join(dist, name));
}
await copyFile('src/bridge/sandbox-api/mcp_runtime.py', join(dist, 'mcp_runtime.py'));
// The WebAssembly kernel's Deno programs and Python, which Deno runs from beside the bundle.
await cp('src/sandbox/wasm/deno-kernel', join(dist, 'deno-kernel'), { recursive: true });
await chmod(join(dist, 'cli.js'), 0o755);
