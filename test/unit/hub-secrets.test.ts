// A running bridge's hub given new server secrets (VS Code's sealed file, read on a reload):
// exactly the servers whose env, header or `${input:ID}` value changed start afresh, the others
// keep their connections, and a restarted server's failures hide the new values.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProxyHub } from '../../src/bridge/proxy/hub.ts';
import { parseConfig } from '../../src/config/load.ts';
import { applySecrets, type Secrets } from '../../src/config/secrets.ts';

// Prints its token to stderr and exits: its start fails, quoting the token.
const failing = ['-e', 'console.error("token is " + process.env.TOKEN); process.exit(3)'];
const entries = {
  plain: { command: process.execPath, args: ['-e', '0'] },
  withEnv: { command: process.execPath, args: ['-e', '0'] },
  withInput: { command: process.execPath, args: failing, env: { TOKEN: '${input:tok}' } },
  withHeader: { type: 'http', url: 'http://127.0.0.1:9/mcp' },
};
const config = parseConfig({ servers: entries });

const secrets = (env: string, input: string, header: string): Secrets => ({
  withEnv: { env: { API_KEY: env }, headers: {} },
  withInput: { env: {}, headers: {}, inputs: { tok: input } },
  withHeader: { env: {}, headers: { Authorization: header } },
});

function connections(hub: ProxyHub): Record<string, unknown> {
  return Object.fromEntries(Object.keys(entries).map((name) => [name, hub.resolveServer(name).connection]));
}

test('new secrets: only the server whose env, header or input changed restarts', async (t) => {
  const hub = new ProxyHub(applySecrets(config, secrets('env-1', 'input-1', 'Bearer h-1')));
  t.after(() => hub.close());
  const cases: Array<[Secrets, string]> = [
    [secrets('env-2', 'input-1', 'Bearer h-1'), 'withEnv'],
    [secrets('env-2', 'input-2', 'Bearer h-1'), 'withInput'],
    [secrets('env-2', 'input-2', 'Bearer h-2'), 'withHeader'],
  ];
  for (const [next, server] of cases) {
    const before = connections(hub);
    const outcome = await hub.reconfigure(applySecrets(config, next));
    assert.deepEqual(outcome, { added: [], removed: [], changed: [server] });
    const after = connections(hub);
    for (const name of Object.keys(entries))
      assert.equal(after[name] === before[name], name !== server, `${name}: ${name === server ? 'kept' : 'restarted'}`);
  }
  const same = connections(hub);
  assert.deepEqual(await hub.reconfigure(applySecrets(config, cases.at(-1)![0])), { added: [], removed: [], changed: [] });
  assert.deepEqual(connections(hub), same, 'the same secrets again: nothing restarts');
  // A secret removed is a change too.
  const { withEnv: _gone, ...fewer } = cases.at(-1)![0];
  assert.deepEqual((await hub.reconfigure(applySecrets(config, fewer))).changed, ['withEnv']);
});

test("new secrets: a restarted server's failure, in the log, hides the new value", async (t) => {
  const logged: string[] = [];
  const hub = new ProxyHub(applySecrets(config, secrets('env-1', 'first-input-value', 'Bearer h-1')), { log: (line) => logged.push(line) });
  t.after(() => hub.close());
  const failure = async (value: string) => {
    const from = logged.length;
    await assert.rejects(hub.listTools('withInput'), /server "withInput" could not start: it exited with code 3/);
    const said = logged.slice(from).join('\n');
    assert.match(said, /token is \*\*\*/);
    assert.ok(!said.includes(value), said);
  };
  await failure('first-input-value');
  await hub.reconfigure(applySecrets(config, secrets('env-1', 'second-input-value', 'Bearer h-1')));
  assert.equal(hub.catalog.get('withInput')?.state, 'not-started', 'its failure is not kept as the new one');
  await failure('second-input-value');
});
