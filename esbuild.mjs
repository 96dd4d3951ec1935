// Bundles the standalone bridge CLI (ESM) and the VS Code extension (CommonJS, as VS Code
// loads it) into dist/, and copies the Python sources the bundles read beside them.
import { build } from 'esbuild';
import { chmod, copyFile, mkdir } from 'node:fs/promises';

const production = process.argv.includes('--production');
await mkdir('dist', { recursive: true });

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
    outdir: 'dist',
    format: 'esm',
    banner: {
      js: "import { createRequire as __cemRequire } from 'node:module'; const require = __cemRequire(import.meta.url);",
    },
  }),
  // The executable: a version check that loads cli-main.js only on a Node it runs on.
  build({
    ...common,
    entryPoints: { cli: 'src/cli/bin.ts' },
    outdir: 'dist',
    format: 'esm',
    target: 'node14',
    external: ['./cli-main.js'],
    banner: { js: '#!/usr/bin/env node' },
  }),
  build({
    ...common,
    entryPoints: { extension: 'src/extension/extension.ts' },
    outdir: 'dist',
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
await copyFile('src/sandbox/container/kernel/kernel.py', 'dist/kernel.py');
await copyFile('src/sandbox/container/kernel/seccomp.py', 'dist/seccomp.py');
await copyFile('src/sandbox/container/kernel/pid1.py', 'dist/pid1.py');
await copyFile('src/sandbox/container/kernel/hints.py', 'dist/hints.py');
await copyFile('src/bridge/sandbox-api/mcp_runtime.py', 'dist/mcp_runtime.py');
// The WebAssembly kernel: Deno runs these files as they are (sandbox/wasm/command.ts).
await mkdir('dist/deno-kernel', { recursive: true });
for (const name of ['host.ts', 'worker.ts', 'channel.ts', 'helpers.py', 'kernel.py']) {
  await copyFile(`src/sandbox/wasm/deno-kernel/${name}`, `dist/deno-kernel/${name}`);
}
await chmod('dist/cli.js', 0o755);
