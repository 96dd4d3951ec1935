// `npm run lint`: typescript-eslint's type-checked rules and prettier's check, side by side. The
// linter spends most of its time type-checking on one core; prettier (a dozen seconds without its
// cache, as on a fresh clone) takes the other. Each report is printed whole when it ends; the exit
// status is the first failure's.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { CACHED_NODE_24 } from './dev-cache.mjs';

// The type-aware rules take a third less time on Node 24 than on Node 20: on a Node older than
// 22, the Node 24 that `npm test` and the demo install into their cache folder runs the checks.
const NODE = Number(process.versions.node.split('.')[0]) < 22 && existsSync(CACHED_NODE_24) ? CACHED_NODE_24 : process.execPath;

const CHECKS = [
  ['node_modules/eslint/bin/eslint.js', '.'],
  ['node_modules/prettier/bin/prettier.cjs', '--check', '--cache', '**/*.{ts,mjs}'],
];

/** Runs one check; resolves to its exit status once its output is printed. */
function check(args) {
  const child = spawn(NODE, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const out = [];
  child.stdout.on('data', (chunk) => out.push(chunk));
  child.stderr.on('data', (chunk) => out.push(chunk));
  return new Promise((done) => {
    child.on('error', (error) => {
      out.push(Buffer.from(`${error.message}\n`));
      done(1);
    });
    child.on('close', (code) => {
      process.stdout.write(Buffer.concat(out));
      done(code ?? 1);
    });
  });
}

const statuses = await Promise.all(CHECKS.map(check));
process.exitCode = statuses.find((status) => status !== 0) ?? 0;
