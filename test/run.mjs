// Runs the test layers. `node test/run.mjs [typecheck] [unit] [integration] [host]` (default:
// unit and integration). Unit files run side by side (no containers). Integration files run one
// more at a time than there are cores (they start real containers and wait on them: another file
// uses the time one spends waiting). The host suite (a real VS Code extension host) is packaged
// while the unit files run, then runs beside the integration files; the development build, the
// type check, and the WebAssembly interpreter snapshot the integration files start from run
// first, beside the packaging. The leftovers check runs alone at the very end, once every suite
// that starts containers is done.
import { spawn } from 'node:child_process';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { prepareHostSuite, runHostSuite } from '../scripts/host-tests.mjs';
import { runFiles } from './file-pool.mjs';
import { bundleFixtures } from './fixture-bundles.mjs';
import { DEV_CACHE } from '../scripts/dev-cache.mjs';
import { useScratchTmp } from '../scripts/scratch-tmp.ts';

const LAYERS = ['typecheck', 'unit', 'integration', 'host'];
const given = process.argv.slice(2);
const unknown = given.filter((layer) => !LAYERS.includes(layer));
if (unknown.length > 0) throw new Error(`test/run.mjs: no layer ${unknown.join(', ')}; the layers are ${LAYERS.join(', ')}`);
const wanted = new Set(given.length > 0 ? given : ['unit', 'integration']);

function testFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...testFiles(path));
    else if (entry.endsWith('.test.ts')) out.push(path);
  }
  return out.sort();
}

// Integration files share the machine's runtimes but nothing of each other's (their own state
// dirs, sessions and containers), so one more at a time than there are cores, the longest first
// (test/file-pool.mjs): much of a file's time is spent waiting (containers starting, timeouts
// running out), which a third file uses (on 2 cores, 26 files took 175 s three at a time against
// 222 s two at a time).
// CEM_TEST_CONCURRENCY=1 runs them one by one (to time one file, or to read interleaved logs).
const integration = Number(process.env.CEM_TEST_CONCURRENCY ?? availableParallelism() + 1);
if (!Number.isInteger(integration) || integration < 1) throw new Error('CEM_TEST_CONCURRENCY: a whole number of files, 1 or more');

// The leftovers check must see what every other suite left behind, so it runs after them, alone.
const LAST = join('test', 'integration', 'leftovers.test.ts');
const started = String(Date.now());
/** Says when a step ended, in seconds from the start: where a slow run spent its time. */
const ended = (what) => process.stdout.write(`ℹ ${what} at ${((Date.now() - Number(started)) / 1000).toFixed(1)} s\n`);

/** Runs a command with the terminal as its output; resolves to its exit status. */
function run(args) {
  const child = spawn(process.execPath, args, { stdio: 'inherit', env: { ...process.env, CEM_TEST_STARTED: started } });
  return new Promise((done) => {
    child.on('error', () => done(1));
    child.on('close', (code) => done(code ?? 1));
  });
}

function nodeTest(files, concurrency) {
  return files.length === 0 ? Promise.resolve(0) : run(['--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files]);
}

// Every Node process of the tests (runners, bridges, fixture servers, the VS Code server) keeps
// its compiled code between runs: each starts 20-25% cheaper in CPU, which a 2-core machine
// running hundreds of them feels. Kept with the other test caches; a user's own setting wins.
process.env.NODE_COMPILE_CACHE ??= join(DEV_CACHE, 'node-compile-cache');
// What the tests leave in the temp folder goes with the run (scripts/scratch-tmp.ts).
useScratchTmp('cem-test-');

const statuses = [];
// The test MCP servers bundled (test/fixture-bundles.mjs), beside the unit files: the integration
// files start them about a hundred times, the host suite's bridges a few dozen. Without the
// bundles they start from the sources.
const fixtures =
  wanted.has('integration') || wanted.has('host')
    ? bundleFixtures().catch((error) => {
        process.stderr.write(`test MCP servers not bundled (${error.message}): the suites start their sources\n`);
        return undefined;
      })
    : Promise.resolve(undefined);
// Incremental (tsconfig.json): an unchanged checkout checks in seconds.
const typecheck = wanted.has('typecheck') ? run(['node_modules/typescript/bin/tsc', '-p', '.']) : Promise.resolve(0);
// The WebAssembly interpreter snapshot of this checkout, made beside the unit files: else the
// first integration files that start an interpreter wait for one of them to make it, under the
// full load of the integration files.
const snapshot = wanted.has('integration')
  ? run(['--input-type=module', '-e', "await (await import('./src/sandbox/wasm/snapshot.ts')).interpreterSnapshot();"])
  : Promise.resolve(0);
// The development build the unit and integration files run (dist/), beside the type check and
// the snapshot; the host suite packages from a folder of its own meanwhile (scripts/package.mjs),
// so the unit files run beside the packaging.
const devBuild = wanted.has('unit') || wanted.has('integration') ? run(['esbuild.mjs']) : Promise.resolve(0);
const hostPrepared = wanted.has('host')
  ? prepareHostSuite().then((work) => {
      ended('host suite packaged');
      return work;
    })
  : Promise.resolve(undefined);
// Its failure is thrown where it is awaited, after the unit files.
hostPrepared.catch(() => undefined);
let hostWork;
try {
  statuses.push(await devBuild);
  if (wanted.has('unit')) {
    statuses.push(await nodeTest(testFiles(join('test', 'unit')), availableParallelism()));
    ended('unit files');
  }
  hostWork = await hostPrepared;
  statuses.push(await typecheck);
  await snapshot;
  const bundles = await fixtures;
  if (bundles) process.env.CEM_TEST_FIXTURES = resolve(bundles);
  const files = wanted.has('integration') ? testFiles(join('test', 'integration')) : [];
  const last = files.includes(LAST) ? files.splice(files.indexOf(LAST), 1) : [];
  statuses.push(
    ...(await Promise.all([
      runFiles(files, integration, { ...process.env, CEM_TEST_STARTED: started }).finally(() => {
        if (files.length > 0) ended('integration files');
      }),
      hostWork ? runHostSuite(hostWork).finally(() => ended('host suite')) : Promise.resolve(0),
    ])),
  );
  statuses.push(await nodeTest(last, 1));
  ended('all');
} finally {
  // A preparation that failed has removed its own folder.
  hostWork ??= await hostPrepared.catch(() => undefined);
  if (hostWork) rmSync(hostWork, { recursive: true, force: true });
  const bundles = await fixtures;
  if (bundles) rmSync(bundles, { recursive: true, force: true });
}
process.exit(statuses.find((status) => status !== 0) ?? 0);
