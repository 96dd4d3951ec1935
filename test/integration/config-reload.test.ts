// A running bridge applies changes to its configuration file without a restart: a session keeps
// its variables when a server is added (and calls the new one at once, as mcp_<alias> and through
// call_tool), a removed server's calls fail saying so, and a file that does not load is ignored
// with a line in the log. A VS Code window's next bridge (after a restart for a sandbox setting)
// tells each session of the previous one, on its first run, that it was reset and why. Server
// secrets in the sealed file a VS Code window writes are read again when it changes: the server
// answers with the new value and the session keeps its variables.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { describe, test } from 'node:test';
import { join } from 'node:path';
import { noteRestart } from '../../src/state/bridge-restarts.ts';
import { OWNER_ENV } from '../../src/state/catalog-file.ts';
import { newTokenKey, parseTokenKey, TOKEN_KEY_ENV } from '../../src/state/oauth-tokens.ts';
import { SECRETS_FILE_ENV, writeSecretsFile } from '../../src/state/secrets-file.ts';
import { FIXTURE, startBridge, structured, tempDir, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { apiSandboxes } from '../helpers/env.ts';
import { until } from '../helpers/wait.ts';

const fixture = (description: string) => ({ command: process.execPath, args: [FIXTURE], description });

/** Rewrites the bridge's file with `change` applied, and waits for the bridge's log to say `logged`. */
async function rewrite(bridge: BridgeHandle, change: (config: Record<string, unknown>) => string, logged: RegExp): Promise<void> {
  const before = bridge.stderr().length;
  await writeFile(bridge.configFile, change(JSON.parse(await readFile(bridge.configFile, 'utf8')) as Record<string, unknown>));
  await until(`the bridge's log to match ${logged}`, () => logged.test(bridge.stderr().slice(before)), 20_000);
}

async function ok(bridge: BridgeHandle, code: string): Promise<Record<string, unknown>> {
  const result = await bridge.call(code);
  const view = structured(result);
  assert.equal(view.status, 'ok', textOf(result));
  assert.equal(view.sessionChange, undefined, 'the session kept its state');
  return view;
}

for (const { label, sandbox } of apiSandboxes()) {
  describe(`configuration changes while the bridge runs, on ${label}`, () => {
    test('a session keeps its variables across added and removed servers, and a bad file is ignored', async () => {
      const bridge = await startBridge({ sandbox, servers: { one: fixture('the first') } });
      try {
        await ok(bridge, 'x = 41\nprint((await mcp_one.add(a=1, b=2)))');
        await rewrite(
          bridge,
          (config) => JSON.stringify({ ...config, servers: { one: fixture('the first'), two: fixture('the second') } }),
          /servers reconfigured: added two/,
        );
        const added = await ok(
          bridge,
          'print(x + 1)\nprint(await mcp_two.echo(message="from the alias"))\nprint(await call_tool("two", "echo", {"message": "by name"}))',
        );
        assert.match(String(added.stdout), /^42\n/);
        assert.match(String(added.stdout), /from the alias/);
        assert.match(String(added.stdout), /by name/);

        await rewrite(bridge, (config) => JSON.stringify({ ...config, servers: { two: fixture('the second') } }), /removed one/);
        const byName = structured(await bridge.call('await call_tool("one", "add", {"a": 1, "b": 2})'));
        assert.equal(byName.status, 'error');
        assert.match(JSON.stringify(byName.error), /server \\"one\\" was removed from the bridge's configuration; available: two/);
        const byAlias = structured(await bridge.call('await mcp_one.add(a=1, b=2)'));
        assert.equal(byAlias.status, 'error');
        assert.match(JSON.stringify(byAlias.error), /NameError.*mcp_one[\s\S]*mcp_two/);

        await rewrite(bridge, () => '{"servers": {', /changed but is not applied: .*not valid JSON.*keeps running with its configuration/);
        const after = await ok(bridge, 'print(x + 1)\nprint(await mcp_two.echo(message="still here"))');
        assert.match(String(after.stdout), /^42\nstill here/);
      } finally {
        await bridge.close();
      }
    });
  });
}

for (const { label, sandbox } of apiSandboxes().slice(0, 1)) {
  test(`after a restart for a sandbox setting, a session's next result says it was reset and why, on ${label}`, async () => {
    const stateDir = join(await tempDir('cem-restart-'), 'state');
    const env = { [OWNER_ENV]: 'window-under-test' };
    const first = await startBridge({ sandbox, stateDir }, env);
    try {
      await ok(first, 'x = 41');
    } finally {
      await first.close();
    }
    // What the extension writes before it has VS Code restart the bridge.
    await noteRestart(stateDir, 'window-under-test', ['sandbox.memory']);
    const second = await startBridge({ sandbox: { ...sandbox, memory: '384m' }, stateDir }, env);
    try {
      const view = structured(await second.call('x + 1'));
      assert.equal(view.status, 'error');
      assert.deepEqual(view.sessionChange, {
        kind: 'reset',
        reason: 'the bridge restarted after a settings change (sandbox.memory), which needs a new sandbox',
      });
      assert.match(JSON.stringify(view.error), /NameError/);
      const fresh = structured(await second.call('print(1)', { session: 'new-one' }));
      assert.equal(fresh.sessionChange, undefined, 'a session the previous bridge did not have is not told anything');
      assert.equal(structured(await second.call('print(2)')).sessionChange, undefined, 'said once');
    } finally {
      await second.close();
    }
  });
}

for (const { label, sandbox } of apiSandboxes().slice(0, 1)) {
  test(`a changed sealed secrets file reaches the running bridge: the server answers the new value, the session keeps x, on ${label}`, async () => {
    const key = newTokenKey();
    const secretsFile = join(await tempDir('cem-secrets-'), 'bridge-secrets.sealed.json');
    const secrets = (value: string) => ({
      fixture: { env: { API_TOKEN: `env-${value}` }, headers: {}, inputs: { token: `input-${value}` } },
    });
    await writeSecretsFile(secretsFile, secrets('one'), parseTokenKey(key));
    const servers = { fixture: { command: process.execPath, args: [FIXTURE], env: { CEM_TOKEN: '${input:token}' } } };
    const bridge = await startBridge({ sandbox, servers }, { [SECRETS_FILE_ENV]: secretsFile, [TOKEN_KEY_ENV]: key });
    const tokens = 'print(await mcp_fixture.env(name="API_TOKEN"), await mcp_fixture.env(name="CEM_TOKEN"))';
    const sealedAgain = async (write: () => Promise<void>, logged: RegExp) => {
      const before = bridge.stderr().length;
      await write();
      await until(`the bridge's log to match ${logged}`, () => logged.test(bridge.stderr().slice(before)), 20_000);
    };
    try {
      const first = await ok(bridge, `x = 1\n${tokens}`);
      assert.equal(first.stdout, 'env-one input-one\n');
      await sealedAgain(() => writeSecretsFile(secretsFile, secrets('two'), parseTokenKey(key)), /servers reconfigured: changed fixture/);
      const second = await ok(bridge, `print(x)\n${tokens}`);
      assert.equal(second.stdout, '1\nenv-two input-two\n');
      // Sealed with another key: said in the log (no value), the secrets it has are kept.
      await sealedAgain(
        () => writeSecretsFile(secretsFile, secrets('three'), parseTokenKey(newTokenKey())),
        /server secrets not updated: .* does not unseal with this bridge's key/,
      );
      const third = await ok(bridge, `print(x)\n${tokens}`);
      assert.equal(third.stdout, '1\nenv-two input-two\n');
      assert.ok(!/env-(one|two|three)|input-(one|two|three)/.test(bridge.stderr()), 'no secret value in the log');
    } finally {
      await bridge.close();
    }
  });
}
