// Runs the test suites with Node's test runner: unit first (fast, no containers, files side by
// side), then the integration suites two files at a time (they start real containers, and wait on
// them: a second file uses the time one spends waiting), the leftovers check alone at the end.
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
// temporary folders), so they run side by side. Integration files share the machine's runtimes
// but nothing of each other's (their own state dirs, sessions and containers), so two at a time;
// CEM_TEST_CONCURRENCY=1 runs them one by one (to time one file, or to read interleaved logs).
const integration = Number(process.env.CEM_TEST_CONCURRENCY ?? 2);
if (!Number.isInteger(integration) || integration < 1) throw new Error('CEM_TEST_CONCURRENCY: a whole number of files, 1 or more');
const CONCURRENCY = { unit: availableParallelism(), integration };

// The leftovers check must see what every other suite left behind, so it runs after them, alone.
const LAST = join('test', 'integration', 'leftovers.test.ts');
const started = String(Date.now());
let status = 0;
function run(files, concurrency) {
  const result = spawnSync(process.execPath, ['--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files], {
    stdio: 'inherit',
    env: { ...process.env, CEM_TEST_STARTED: started },
  });
  if (result.status !== 0) status = result.status ?? 1;
}
for (const layer of wanted) {
  const files = testFiles(join('test', layer));
  const last = files.includes(LAST) ? files.splice(files.indexOf(LAST), 1) : [];
  run(files, CONCURRENCY[layer] ?? 1);
  if (last.length > 0) run(last, 1);
}
process.exit(status);
