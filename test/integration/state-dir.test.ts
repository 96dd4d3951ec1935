// The state dir with real bridge processes: two bridges (as two VS Code windows start) write
// one run log and one catalog at once, through rotation, and neither loses the other's runs or
// servers; the files are owner-only; a state dir that cannot be written is said out loud, in
// the bridge's log and in every run_python result.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CATALOG_FILE, mergeCatalog, parseCatalogFile } from '../../src/state/catalog-file.ts';
import { RunLogReader } from '../../src/state/run-log/reader.ts';
import { runLogFiles } from '../../src/state/run-log/files.ts';
import { FIXTURE, startBridge, structured, tempDir, textOf } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';
import { until } from '../helpers/wait.ts';

const [runtime = 'podman'] = testRuntimes();
const sandbox = {
  runtime,
  image: TEST_IMAGE,
  memory: '256m',
  pids: 64,
  timeoutSeconds: 30,
  maxTimeoutSeconds: 60,
  maxSessions: 2,
  prewarm: false,
};
const RUNS = 8;
const posix = process.platform !== 'win32';

test(`two bridges on ${runtime} share a state dir through rotation: every run and every server is kept`, async (t) => {
  const root = await tempDir('cem-shared-');
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const stateDir = join(root, 'state');
  const config = (server: string) => ({
    stateDir,
    sandbox,
    runLog: { maxFileBytes: 16 * 1024, keepFiles: 100 },
    servers: { [server]: { command: process.execPath, args: [FIXTURE], description: `the ${server} window's server` } },
  });
  const [alpha, beta] = await Promise.all([
    startBridge(config('alpha'), { CODE_EXECUTION_MODE_OWNER: 'window-a' }),
    startBridge(config('beta'), { CODE_EXECUTION_MODE_OWNER: 'window-b' }),
  ]);
  try {
    const runAll = async (bridge: typeof alpha, server: string) => {
      for (let i = 0; i < RUNS; i++) {
        const result = await bridge.call(
          `await mcp_${server}.echo(message="${server}-${i}")\nprint("${server}-${i}:" + "z" * 3000)\n"${server}-${i}"`,
        );
        assert.equal(structured(result).status, 'ok', textOf(result));
      }
    };
    await Promise.all([runAll(alpha, 'alpha'), runAll(beta, 'beta')]);

    assert.ok(runLogFiles(stateDir).length >= 3, `the log rotated only into ${runLogFiles(stateDir).length} files`);
    const runs = new RunLogReader(stateDir).runs();
    for (const server of ['alpha', 'beta']) {
      const mine = runs.filter((r) => r.code.includes(`mcp_${server}.echo`));
      assert.equal(mine.length, RUNS, `${server}: ${mine.length} runs read back`);
      for (const run of mine) {
        assert.equal(run.status, 'ok');
        assert.deepEqual(
          run.toolCalls.map((c) => `${c.server}.${c.tool}`),
          [`${server}.echo`],
        );
        assert.match(run.stdout, new RegExp(`^${server}-\\d:z{3000}`));
      }
    }

    // Each bridge's servers in its own section; each window's view has its own states. A bridge
    // saves its section after each change, so the file is awaited until it shows both running.
    const catalogFile = join(stateDir, CATALOG_FILE);
    const sections = await until("both bridges' sections in catalog.json, their servers running and listed", () => {
      const found = existsSync(catalogFile) ? parseCatalogFile(readFileSync(catalogFile, 'utf8')) : [];
      const [seenByA, seenByB] = [mergeCatalog(found, 'window-a'), mergeCatalog(found, 'window-b')];
      const listed = (entry: { tools?: Array<{ name: string }> } | undefined) => entry?.tools?.some((t) => t.name === 'echo') === true;
      return (
        found.length >= 2 &&
        seenByA.alpha?.state === 'running' &&
        seenByB.beta?.state === 'running' &&
        listed(seenByA.alpha) &&
        listed(seenByA.beta) &&
        found
      );
    });
    assert.deepEqual(sections.map(([, s]) => [s.owner, Object.keys(s.servers)]).sort(), [
      ['window-a', ['alpha']],
      ['window-b', ['beta']],
    ]);
    const a = mergeCatalog(sections, 'window-a');
    assert.equal(a.alpha?.state, 'running');
    assert.ok(a.alpha?.tools?.some((t) => t.name === 'echo'));
    assert.equal(a.beta?.state, 'not-started', "window B's server, seen from window A");
    assert.ok(
      a.beta?.tools?.some((t) => t.name === 'echo'),
      "window B's tool list serves as a cache",
    );
    assert.equal(mergeCatalog(sections, 'window-b').beta?.state, 'running');

    if (posix) {
      assert.equal(statSync(stateDir).mode & 0o777, 0o700);
      for (const name of readdirSync(stateDir).filter((n) => n.endsWith('.json') || n.endsWith('.jsonl'))) {
        assert.equal(statSync(join(stateDir, name)).mode & 0o777, 0o600, name);
      }
    }
  } finally {
    await Promise.all([alpha.close(), beta.close()]);
  }
});

test(`an unwritable state dir on ${runtime}: the bridge says so loudly, and every run_python result says the run is not recorded`, async (t) => {
  // A file where the folder should be: unwritable for any user, root included.
  const root = await tempDir('cem-unwritable-');
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const blocker = join(root, 'not-a-folder');
  writeFileSync(blocker, '');
  const bridge = await startBridge({ stateDir: join(blocker, 'state'), sandbox });
  try {
    const result = await bridge.call('6 * 7');
    assert.equal(structured(result).status, 'ok', textOf(result));
    assert.equal(structured(result).value, '42');
    assert.match(
      String(structured(result).auditLog),
      /^the audit log is not being written \(cannot write the run log .*not-a-folder.*\): this run is not recorded$/,
    );
    assert.match(textOf(result), /\[the audit log is not being written/);
    // The bridge's stderr is another pipe than its answers: it may arrive after the result.
    await until("the warning on the bridge's stderr", () =>
      /AUDIT LOG NOT WRITTEN: cannot write the run log .*not-a-folder/.test(bridge.stderr()),
    );
  } finally {
    await bridge.close();
  }
});
