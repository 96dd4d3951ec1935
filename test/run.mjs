// Runs the test suites with Node's test runner: unit first (fast, no containers), then the
// integration suites one file at a time (they start real containers on a 2-core machine).
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const layers = process.argv.slice(2);
const wanted = layers.length > 0 ? layers : ['unit', 'integration'];

function testFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...testFiles(path));
    else if (entry.endsWith('.test.ts')) out.push(path);
  }
  return out.sort();
}

// The leftovers check must see what every other suite left behind, so it goes last.
const LAST = join('test', 'integration', 'leftovers.test.ts');
const files = wanted.flatMap((layer) => testFiles(join('test', layer)));
if (files.includes(LAST)) files.push(...files.splice(files.indexOf(LAST), 1));
const result = spawnSync(
  process.execPath,
  ['--test', '--test-concurrency=1', '--test-reporter=spec', ...files],
  { stdio: 'inherit', env: { ...process.env, CEM_TEST_STARTED: String(Date.now()) } },
);
process.exit(result.status ?? 1);
