// Runs the test suites with Node's test runner: unit first (fast, no containers, files side by
// side), then the integration suites one file at a time (they start real containers).
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
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

// Unit files start no containers and share nothing (each runs in its own process, with its own
// temporary folders), so they run side by side; integration files stay one at a time.
const CONCURRENCY = { unit: availableParallelism(), integration: 1 };

// The leftovers check must see what every other suite left behind, so it goes last.
const LAST = join('test', 'integration', 'leftovers.test.ts');
const started = String(Date.now());
let status = 0;
for (const layer of wanted) {
  const files = testFiles(join('test', layer));
  if (files.includes(LAST)) files.push(...files.splice(files.indexOf(LAST), 1));
  const result = spawnSync(
    process.execPath,
    ['--test', `--test-concurrency=${CONCURRENCY[layer] ?? 1}`, '--test-reporter=spec', ...files],
    { stdio: 'inherit', env: { ...process.env, CEM_TEST_STARTED: started } },
  );
  if (result.status !== 0) status = result.status ?? 1;
}
process.exit(status);
