// The sandbox's own open-file and process limits, on real runtimes: they hold inside the
// sandbox, a sandbox starts on a host whose hard limits are below podman's defaults (podman
// configured without any ulimit override), and a limit the runtime may not set is named by
// doctor with its fix.
import assert from 'node:assert/strict';
import { execa } from 'execa';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runArgs } from '../../src/sandbox/engines/commands.ts';
import { hostHardLimits, sandboxUlimits } from '../../src/sandbox/engines/ulimits.ts';
import { startBridge, structured, tempDir, textOf } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes, testSandbox } from '../helpers/env.ts';

const cli = (args: string[], env: Record<string, string> = {}) => execa(process.execPath, ['dist/cli.js', ...args], { reject: false, env });

const READ_LIMITS = 'import resource\nprint(*resource.getrlimit(resource.RLIMIT_NOFILE), *resource.getrlimit(resource.RLIMIT_NPROC))';

/** A containers.conf with nothing but the OCI runtime this host needs: podman's own ulimit defaults apply. */
async function confWithoutUlimits(): Promise<string> {
  const file = join(await tempDir('cem-conf-'), 'containers.conf');
  await writeFile(file, '[engine]\nruntime = "runc"\n');
  return file;
}

async function configFile(sandbox: Record<string, unknown>): Promise<string> {
  const dir = await tempDir('cem-limits-');
  const file = join(dir, 'config.json');
  await writeFile(file, JSON.stringify({ stateDir: join(dir, 'state'), sandbox }));
  return file;
}

for (const runtime of testRuntimes()) {
  describe(`sandbox limits on ${runtime}`, () => {
    test('resource.getrlimit inside the sandbox shows the configured open-file and process limits', async () => {
      const sandbox = testSandbox(runtime, { pids: 64, maxSessions: 2 });
      const expected = sandboxUlimits(sandbox, hostHardLimits());
      const bridge = await startBridge({ sandbox });
      try {
        const result = await bridge.call(READ_LIMITS);
        assert.equal(structured(result).status, 'ok', textOf(result));
        assert.equal(structured(result).stdout, `${expected.nofile} ${expected.nofile} ${expected.nproc} ${expected.nproc}\n`);
      } finally {
        await bridge.close();
      }
    });

    test('a --ulimit in extraRunArgs is the one the sandbox gets', async () => {
      const bridge = await startBridge({ sandbox: testSandbox(runtime, { extraRunArgs: ['--ulimit', 'nofile=256:256'] }) });
      try {
        const result = await bridge.call(READ_LIMITS);
        assert.match(String(structured(result).stdout), /^256 256 \d+ \d+\n$/, textOf(result));
      } finally {
        await bridge.close();
      }
    });

    test('a limit above the runtime\'s hard limit: doctor names the cause and the fix, not "Review extra run arguments"', async (t) => {
      const hard = hostHardLimits().nofile;
      if (hard === undefined || hard >= 1 << 30) return t.skip('this host has no open-file hard limit to exceed');
      const config = await configFile(testSandbox(runtime, { extraRunArgs: ['--ulimit', `nofile=${hard + 1}:${hard + 1}`] }));
      const doctor = await cli(['doctor', '--config', config, '--runtime', runtime]);
      assert.equal(doctor.exitCode, 3, doctor.stdout);
      assert.match(doctor.stdout, new RegExp(`FAIL hardened sandbox starts: ${runtime} may not set the sandbox's limit of open files`));
      assert.match(
        doctor.stdout,
        new RegExp(`- ${runtime} cannot set the sandbox's limit of open files .*: it is above the hard limit of`),
      );
      assert.match(doctor.stdout, /fix: Set the sandbox's limits: setting sandbox\.extraRunArgs/);
      assert.doesNotMatch(doctor.stdout, /Review extra run arguments/);
    });

    test('the same limit: run_python names the cause too (a first sandbox that fails to start is explained by the checks)', async (t) => {
      const hard = hostHardLimits().nofile;
      if (hard === undefined || hard >= 1 << 30) return t.skip('this host has no open-file hard limit to exceed');
      const bridge = await startBridge({ sandbox: testSandbox(runtime, { extraRunArgs: ['--ulimit', `nofile=${hard + 1}:${hard + 1}`] }) });
      try {
        const result = await bridge.call('print(1)');
        assert.equal(result.isError, true);
        assert.match(
          textOf(result),
          new RegExp(`${runtime} cannot set the sandbox's limit of open files .*: it is above the hard limit of`),
        );
      } finally {
        await bridge.close();
      }
    });
  });
}

if (testRuntimes().includes('podman')) {
  describe("podman configured without a ulimit override (its defaults above this host's hard limits)", () => {
    test('a sandbox starts, runs code and has its own limits; doctor passes', async () => {
      const conf = await confWithoutUlimits();
      const env = { CONTAINERS_CONF: conf };
      const sandbox = testSandbox('podman');
      const expected = sandboxUlimits(sandbox, hostHardLimits());
      // Where podman's defaults are within the hard limits, the premise does not hold: say so, then go on.
      const hard = hostHardLimits();
      const defaultsTooHigh = (hard.nofile ?? Infinity) < 1_048_576 || (hard.nproc ?? Infinity) < 4_194_304;
      if (defaultsTooHigh) {
        // Without the sandbox's own limits, this very podman refuses the hardened container.
        const own = runArgs('podman', sandbox, {
          name: `cem-ulimit-premise-${process.pid}`,
          owner: 'test',
          session: 'premise',
          hostLimits: hard,
        });
        const without = own.filter((a, i) => a !== '--ulimit' && own[i - 1] !== '--ulimit');
        const bare = await execa('podman', [...without.slice(0, -3), '-c', 'print(1)'], { reject: false, env: { ...process.env, ...env } });
        assert.notEqual(bare.exitCode, 0, 'podman without --ulimit should fail on this host');
        assert.match(bare.stderr, /rlimit/i);
      }
      const bridge = await startBridge({ sandbox }, env);
      try {
        const result = await bridge.call(`print(6 * 7)\n${READ_LIMITS}`);
        assert.equal(structured(result).status, 'ok', textOf(result));
        assert.equal(structured(result).stdout, `42\n${expected.nofile} ${expected.nofile} ${expected.nproc} ${expected.nproc}\n`);
        const log = await readFile(join(bridge.stateDir, 'runs.jsonl'), 'utf8');
        assert.match(log, /"type":"run-end".*"sandbox":\{"runtime":"podman","isolation":"container","ociRuntime":"runc"\}/);
      } finally {
        await bridge.close();
      }
      const doctor = await cli(['doctor', '--runtime', 'podman', '--image', TEST_IMAGE], env);
      assert.equal(doctor.exitCode, 0, doctor.stdout);
      assert.match(doctor.stdout, /ok {3}hardened sandbox starts/);
    });
  });
}
