// Bundles the standalone bridge CLI into dist/ and copies the kernel beside it.
import { build } from 'esbuild';
import { chmod, copyFile, mkdir } from 'node:fs/promises';

const watch = process.argv.includes('--watch');
await mkdir('dist', { recursive: true });

const common = {
  bundle: true,
  platform: 'node',
  target: 'node22',
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: watch ? 'info' : 'warning',
};

await build({
  ...common,
  entryPoints: { cli: 'src/bridge/cli.ts' },
  outdir: 'dist',
  format: 'esm',
  banner: {
    js: "#!/usr/bin/env node\nimport { createRequire as __cemRequire } from 'node:module'; const require = __cemRequire(import.meta.url);",
  },
});
await copyFile('src/sandbox/kernel/kernel.py', 'dist/kernel.py');
await copyFile('src/bridge/runtime/mcp_runtime.py', 'dist/mcp_runtime.py');
await chmod('dist/cli.js', 0o755);
