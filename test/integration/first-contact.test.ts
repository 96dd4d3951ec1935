// What a new user meets first: `doctor`, a missing sandbox image from the CLI and from the
// bridge (the fix named for where it runs), and pulls only when asked for.
import assert from 'node:assert/strict';
import { execa } from 'execa';
import { test } from 'node:test';
import { startBridge, structured, textOf } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';

const MISSING = 'localhost/cem-missing:none';
const cli = (args: string[], env: Record<string, string> = {}) => execa(process.execPath, ['dist/cli.js', ...args], { reject: false, env });

for (const runtime of testRuntimes()) {
  test(`${runtime}: doctor shows every check and exits 0 when a sandbox really starts`, async () => {
    const result = await cli(['doctor', '--runtime', runtime, '--image', TEST_IMAGE]);
    assert.equal(result.exitCode, 0, result.stdout + result.stderr);
    assert.match(
      result.stdout,
      new RegExp(`^Sandbox: ready with ${runtime} \\(OCI runtime [\\w./-]+\\) \\(image ${TEST_IMAGE.replace(/[.]/g, '\\.')}\\)`),
    );
    for (const check of ['installed', 'daemon / machine', 'resource limits', 'image', 'hardened sandbox starts']) {
      assert.match(result.stdout, new RegExp(`  ok   ${check}: `));
    }
  });

  test(`${runtime}: a missing image fails doctor (exit 3) and run (exit 3) with the fix, and nothing is pulled unasked`, async () => {
    const doctor = await cli(['doctor', '--backend', 'container', '--runtime', runtime, '--image', MISSING]);
    assert.equal(doctor.exitCode, 3);
    assert.match(doctor.stdout, /Sandbox: NOT ready/);
    assert.match(doctor.stdout, new RegExp(`FAIL image: ${MISSING} is not present in ${runtime}`));
    assert.match(doctor.stdout, new RegExp(`fix: Pull ${MISSING}: ${runtime} pull ${MISSING}`));
    const run = await cli(['run', '--backend', 'container', '--runtime', runtime, '--image', MISSING, '-c', 'print(1)']);
    assert.equal(run.exitCode, 3);
    assert.match(
      run.stderr,
      /is not present in .* never download it by themselves\. Pull it once: `code-execution-mode pull`.*or start the bridge with --pull/,
    );
    assert.doesNotMatch(run.stderr, /Pulling/);
  });

  test(`${runtime}: --pull pulls a missing image on first use (here the pull itself fails, on loopback)`, async () => {
    const run = await cli(['run', '--backend', 'container', '--pull', '--runtime', runtime, '--image', MISSING, '-c', 'print(1)']);
    assert.equal(run.exitCode, 3);
    assert.match(run.stderr, new RegExp(`Pulling ${MISSING} with ${runtime}`));
    assert.match(run.stderr, new RegExp(`Pulling ${MISSING} with ${runtime} failed: `));
    // The runtime's words, then what they most likely mean and the fix.
    assert.match(run.stderr, /Likely cause: the registry could not be reached .*Fix: check the connection/);
  });
}

test('in VS Code, the model is told the command the user has to pull a missing image', async () => {
  const bridge = await startBridge({ sandbox: { image: MISSING, runtime: testRuntimes()[0] } }, { CODE_EXECUTION_MODE_CLIENT: 'vscode' });
  try {
    const result = await bridge.call('print(1)');
    assert.equal(result.isError, true);
    assert.match(textOf(result), /not present in .*"Code Execution Mode: Prepare Sandbox Image"/);
    assert.doesNotMatch(textOf(result), /code-execution-mode pull/);
    assert.equal(structured(result).status, 'error');
  } finally {
    await bridge.close();
  }
});
