// Proxied servers as users have them on first contact, through the real bridge process and
// real fixture servers: the environment and variables they start with, why one fails (in our
// words to the sandbox, its stderr only to the log and the Tools view), and slow or hung
// servers that never hold up the others or the run's clock; credentials in a server's URL
// never printed or stored.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { readFile, realpath, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { homedir } from 'node:os';
import { basename, join, resolve, sep } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { execa } from 'execa';
import { CATALOG_FILE } from '../../src/bridge/catalog/catalog.ts';
import { RUN_LOG_FILE } from '../../src/state/run-log/writer.ts';
import { FIXTURE, startBridge, structured, tempDir, textOf, type BridgeHandle } from '../helpers/bridge.ts';
import { TEST_IMAGE, testRuntimes } from '../helpers/env.ts';
import { until } from '../helpers/wait.ts';

const [runtime = 'podman'] = testRuntimes();
const sandbox = { runtime, image: TEST_IMAGE, memory: '256m', timeoutSeconds: 20, maxTimeoutSeconds: 60 };
const fixture = (...args: string[]) => ({ command: process.execPath, args: [FIXTURE, ...args] });

/** The value of the run's last expression, parsed from the JSON the code printed as its value. */
function jsonValue(result: Awaited<ReturnType<BridgeHandle['call']>>): unknown {
  assert.equal(structured(result).status, 'ok', textOf(result));
  return JSON.parse(String(structured(result).stdout));
}

describe(`proxied server environment and variables (${runtime})`, () => {
  let bridge: BridgeHandle;
  let workspace: string;
  let caFile: string;

  before(async () => {
    workspace = await tempDir('cem-workspace-');
    caFile = join(workspace, 'corporate-ca.pem');
    await writeFile(caFile, '');
    bridge = await startBridge(
      {
        sandbox,
        proxy: { connectTimeoutSeconds: 10 },
        servers: {
          probe: {
            ...fixture(
              '--root',
              '${workspaceFolder}${/}data',
              '--home=${userHome}',
              '--key',
              '${input:api-key}',
              '--keep',
              '${config:unknown}',
            ),
            env: { FROM_HOST: '${env:CEM_TEST_PRIVATE_VAR}', UNSET: '${env:CEM_TEST_UNSET_VAR}', BASE: '${workspaceFolderBasename}' },
            cwd: '${workspaceFolder}',
          },
          locked: { ...fixture('--token', '${input:gh-token}') },
        },
      },
      {
        HTTPS_PROXY: 'http://127.0.0.1:9',
        https_proxy: 'http://127.0.0.1:9',
        NO_PROXY: 'localhost,127.0.0.1',
        NODE_EXTRA_CA_CERTS: caFile,
        SSL_CERT_DIR: workspace,
        REQUESTS_CA_BUNDLE: caFile,
        CEM_TEST_PRIVATE_VAR: 'private-to-the-host',
        NODE_OPTIONS: '--max-old-space-size=300',
        CODE_EXECUTION_MODE_SECRETS: JSON.stringify({ probe: { inputs: { 'api-key': 'from-secret-storage' } } }),
      },
      ['--workspace', workspace],
    );
  });
  after(async () => {
    await bridge?.close();
  });

  test('a stdio server gets the proxy and CA variables, not the rest of the host environment', async () => {
    const info = jsonValue(await bridge.call('import json\nprint(json.dumps(await mcp_probe.process_info()))')) as {
      env: Record<string, string>;
    };
    const env = info.env;
    assert.equal(env.HTTPS_PROXY, 'http://127.0.0.1:9');
    assert.equal(env.https_proxy, 'http://127.0.0.1:9');
    assert.equal(env.NO_PROXY, 'localhost,127.0.0.1');
    assert.equal(env.NODE_EXTRA_CA_CERTS, caFile);
    assert.equal(env.SSL_CERT_DIR, workspace);
    assert.equal(env.REQUESTS_CA_BUNDLE, caFile);
    assert.equal(env.PATH, process.env.PATH);
    for (const name of ['CEM_TEST_PRIVATE_VAR', 'NODE_OPTIONS', 'CODE_EXECUTION_MODE_SECRETS', 'CEM_TEST_IMAGE']) {
      assert.equal(env[name], undefined, `${name} must not reach the server`);
    }
  });

  test('${workspaceFolder}, ${userHome}, ${env:X}, ${/} and ${input:ID} are substituted in args, env and cwd', async () => {
    const info = jsonValue(await bridge.call('import json\nprint(json.dumps(await mcp_probe.process_info()))')) as {
      cwd: string;
      argv: string[];
      env: Record<string, string>;
    };
    assert.equal(await realpath(info.cwd), await realpath(workspace));
    assert.deepEqual(info.argv, [
      '--root',
      `${workspace}${sep}data`,
      `--home=${homedir()}`,
      '--key',
      'from-secret-storage',
      '--keep',
      '${config:unknown}',
    ]);
    assert.equal(info.env.FROM_HOST, 'private-to-the-host', '${env:X} reads the bridge environment');
    assert.equal(info.env.UNSET, '');
    assert.equal(info.env.BASE, basename(workspace));
  });

  test('a missing ${input:ID} stops that one server, with the input and the command to set it named', async () => {
    const result = await bridge.call(
      [
        'try:',
        '    await call_tool("locked", "echo", {"message": "x"})',
        '    outcome = "called"',
        'except ToolError as e:',
        '    outcome = (e.kind, str(e))',
        '(outcome, await mcp_probe.echo(message="still fine"))',
      ].join('\n'),
    );
    const value = String(structured(result).value);
    assert.match(
      value,
      /^\(\('unavailable', 'locked\.echo: server "locked" cannot start: it uses \$\{input:gh-token\}, and input "gh-token" has no stored value; set it with the "Code Execution Mode: Set Server Secret" command'\), 'still fine'\)$/,
      textOf(result),
    );
  });
});

describe(`proxied servers that start badly (${runtime})`, () => {
  let bridge: BridgeHandle;

  before(async () => {
    bridge = await startBridge(
      {
        sandbox,
        // Search waits 1 s for servers still starting, far below the 6 s they take to fail.
        proxy: { connectTimeoutSeconds: 6, discoveryWaitSeconds: 1 },
        servers: {
          healthy: { ...fixture(), description: 'Answers at once' },
          hung: fixture('--hang', '--say', 'npm http fetch GET https://registry.npmjs.org/x attempt 3 failed with ECONNREFUSED'),
          stuck: fixture('--hang'),
          slow: fixture('--start-delay', '3000'),
          slower: fixture('--start-delay', '3000'),
          // API_KEY is long, so redacted wherever it shows; API_TOKEN is short but a stored secret.
          broken: {
            ...fixture('--say', 'using token %API_TOKEN% and key %API_KEY% for s.example', '--fail-start'),
            env: { API_KEY: 'sk-live-1234567890' },
          },
        },
      },
      { CODE_EXECUTION_MODE_SECRETS: JSON.stringify({ broken: { env: { API_TOKEN: 'hunter2' } } }) },
    );
  });
  after(async () => {
    await bridge?.close();
  });

  // First: nothing has started the slow servers yet.
  test('a slow-starting server is waited for without charging the wait to the run timeout', async () => {
    const result = await bridge.call(
      [
        'import asyncio, time',
        't = time.monotonic()',
        // Both start together: one through call_tool, one through the attribute (a synchronous listing).
        'later = asyncio.ensure_future(call_tool("slower", "echo", {"message": "b"}))',
        'await asyncio.sleep(0.1)',
        'a = await mcp_slow.echo(message="a")',
        // Longer than the run's 2 s limit (the start took 3 s): the wait was not charged to it.
        '(a, await later, 2.5 < time.monotonic() - t)',
      ].join('\n'),
      { timeout: 2 },
    );
    assert.equal(structured(result).status, 'ok', textOf(result));
    assert.equal(structured(result).value, "('a', 'b', True)");
  });

  test('cancelling a run stops its wait for a server that is starting', async () => {
    // A bridge of its own, whose server waits a minute to be given up: the suite's bridge gives up
    // on its hung servers 6 s after they start, which a loaded machine can reach before this test.
    const own = await startBridge({ sandbox, proxy: { connectTimeoutSeconds: 60 }, servers: { stuck: fixture('--hang') } });
    try {
      // The session's container started first: what is cancelled is the wait, not a start.
      assert.equal(structured(await own.call('0', { session: 'cancel-wait' })).status, 'ok');
      const abort = new AbortController();
      setTimeout(() => abort.abort(), 800);
      await assert.rejects(
        own.call('await call_tool("stuck", "echo", {"message": "x"})', { session: 'cancel-wait' }, { signal: abort.signal }),
      );
      // The run ends when the wait is given up, long before the 60 s connect timeout would end it.
      const end = await until(
        'the run to end',
        async () => {
          const log = await readFile(join(own.stateDir, RUN_LOG_FILE), 'utf8').catch(() => '');
          return log
            .trim()
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l) as { type: string; session: string; status: string; error?: { message: string }; durationMs: number })
            .find((e) => e.type === 'run-end' && e.session === 'cancel-wait' && e.status !== 'ok');
        },
        30_000,
      );
      assert.equal(end.status, 'cancelled');
      assert.ok(end.durationMs < 30_000, `the run took ${end.durationMs} ms`);
      assert.match(
        end.error?.message ?? '',
        /^The run was cancelled and interrupted while waiting for stuck\.echo \(\d+\.\d s\)\. The session's state \(variables, imports\) is kept\.$/,
      );
    } finally {
      await own.close();
    }
  });

  test('search answers from the healthy server at once and names the hung one on stderr', async () => {
    // The healthy server up first (a call waits for its start, however loaded the machine):
    // what is checked is the search beside a server that never finishes starting.
    assert.equal(structured(await bridge.call('await mcp_healthy.echo(message="up")')).status, 'ok');
    const result = await bridge.call(
      [
        'hits = await search_tool_docs("echo a message back", limit=3)',
        'servers = {s["name"]: s["status"] for s in discovered_servers()}',
        '(type(hits).__name__, hits[0]["server"], hits[0]["tool"], servers["hung"])',
      ].join('\n'),
    );
    assert.equal(structured(result).status, 'ok', textOf(result));
    // Still starting when the search answered: it did not wait for the hung start to end (its 6 s connect timeout).
    assert.equal(structured(result).value, "('list', 'healthy', 'echo', 'starting')", textOf(result));
    const line = String(structured(result).stderr)
      .split('\n')
      .find((l) => l.startsWith('search_tool_docs: not searched yet: '));
    assert.ok(line, textOf(result));
    assert.match(line, /hung \(starting\)/);
    assert.doesNotMatch(line, /healthy/);
  });

  test('a server that exits at start: the sandbox hears why in our words; its stderr, redacted, goes to the log and the Tools view', async () => {
    const result = await bridge.call(
      [
        'try:',
        '    await mcp_broken.echo(message="x")',
        '    outcome = "called"',
        'except ToolError as e:',
        '    outcome = (e.kind, str(e))',
        'outcome',
      ].join('\n'),
    );
    const value = String(structured(result).value);
    // Search started it a moment ago: the call may meet its restart backoff.
    assert.match(
      value,
      /^\('unavailable', 'broken\.echo: server "broken" could not start: it exited with code 1 \(its error output is in the Code Execution Mode log\)( \(next attempt to start it in \d+ s\))?'\)$/,
      textOf(result),
    );
    const servers = String(structured(await bridge.call('[s.get("error") for s in discovered_servers() if s["name"] == "broken"]')).value);
    assert.match(
      servers,
      /^\['server "broken" could not start: it exited with code 1 \(its error output is in the Code Execution Mode log\)/,
    );
    for (const text of [value, servers])
      assert.doesNotMatch(text, /fatal|s\.example|\*\*\*/, 'nothing the server wrote reaches the sandbox');
    // The Tools view reads the catalog file, written a moment after a change.
    let catalog = '';
    for (let i = 0; i < 40 && !/"broken":\{[^}]*"state":"error"/.test(catalog); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      catalog = await readFile(join(bridge.stateDir, CATALOG_FILE), 'utf8');
    }
    assert.match(
      catalog,
      /"broken":\{[^}]*"state":"error","error":"server \\"broken\\" failed to start: [^"]*fatal: cannot reach the package registry/,
    );
    for (const text of [value, bridge.stderr(), catalog]) assert.doesNotMatch(text, /hunter2|sk-live-1234567890/);
    assert.match(
      bridge.stderr(),
      /server "broken" failed to start: .*\(it exited with code 1\); its stderr ended with: using token \*\*\* and key \*\*\* for s\.example \| fatal: cannot reach the package registry/,
      'the log has it',
    );
  });

  test('the run clock still counts the code: a 2 s run that waits on a tool times out and says for what', async () => {
    const result = await bridge.call('await mcp_healthy.hang()', { timeout: 2 });
    assert.equal(structured(result).status, 'timeout');
    const error = structured(result).error as { message: string };
    assert.match(
      error.message,
      /^The code did not finish within 2 s and was interrupted while waiting for healthy\.hang \([12]\.\d s\)\. The session's state \(variables, imports\) is kept\.$/,
    );
  });

  test('a hung server fails calls with its timeout named (its stderr only in the log); the others keep working', async () => {
    const result = await bridge.call(
      [
        'try:',
        '    await call_tool("hung", "echo", {"message": "x"})',
        '    outcome = "called"',
        'except ToolError as e:',
        '    outcome = (e.kind, str(e))',
        // Right away, while it waits out its restart backoff.
        'from mcp import runtime',
        'print(runtime.capability_summary())',
        '(outcome, await mcp_healthy.echo(message="fine"))',
      ].join('\n'),
      { timeout: 3 },
    );
    assert.equal(structured(result).status, 'ok', textOf(result));
    assert.match(
      String(structured(result).value),
      /^\(\('unavailable', 'hung\.echo: server "hung" did not finish starting within 6 s \(proxy\.connectTimeoutSeconds\) \(its error output is in the Code Execution Mode log\)'\), 'fine'\)$/,
    );
    assert.doesNotMatch(String(structured(result).stdout), /registry\.npmjs\.org/);
    assert.match(
      bridge.stderr(),
      /server "hung" did not finish starting within 6 s \(proxy\.connectTimeoutSeconds\); its stderr ended with: npm http fetch GET https:\/\/registry\.npmjs\.org\/x attempt 3 failed with ECONNREFUSED/,
    );
    assert.match(
      String(structured(result).stdout),
      /mcp_hung\s+\(tools not known yet\) \[error: server "hung" did not finish starting within 6 s/,
    );
  });
});

test("without --workspace, ${workspaceFolder} is the configuration's workspaceFolder, else the current folder", async () => {
  const here = await tempDir('cem-cwd-');
  const configured = await tempDir('cem-configured-');
  // The bridge's cwd is what getcwd says: the real path (temp folders are symlinked on macOS).
  const cases: Array<[Record<string, unknown>, string]> = [
    [{}, await realpath(here)],
    [{ workspaceFolder: configured }, configured],
  ];
  for (const [i, [extra, expected]] of cases.entries()) {
    const file = join(here, `config-${i}.json`);
    await writeFile(
      file,
      JSON.stringify({ stateDir: join(here, 'state'), sandbox, servers: { probe: fixture('--root=${workspaceFolder}') }, ...extra }),
    );
    const result = await execa(
      process.execPath,
      [resolve('dist/cli.js'), 'run', '--config', file, '-c', 'print((await mcp_probe.process_info())["argv"][0])'],
      {
        cwd: here,
        reject: false,
      },
    );
    assert.equal(result.exitCode, 0, result.stderr);
    assert.equal(result.stdout.trim(), `--root=${expected}`);
  }
});

describe(`credentials in a server's URL (${runtime})`, () => {
  test('never reach catalog.json, the bridge log, the run log or the sandbox', async () => {
    const port = await closedLoopbackPort();
    const secrets = ['S3cretPassw0rd', 'QuerySecret1234', 'sk-PathSecret5678'];
    const bridge = await startBridge({
      sandbox,
      proxy: { connectTimeoutSeconds: 5 },
      servers: {
        userinfo: { url: `http://alice:${secrets[0]}@127.0.0.1:${port}/mcp` },
        query: { url: `http://127.0.0.1:${port}/mcp?api_key=${secrets[1]}` },
        path: { url: `http://127.0.0.1:${port}/mcp/${secrets[2]}/sse`, type: 'sse' },
      },
    });
    try {
      const result = await bridge.call(
        [
          'out = []',
          'for server in ("userinfo", "query", "path"):',
          '    try:',
          '        await call_tool(server, "echo", {"message": "x"})',
          '    except ToolError as e:',
          '        out.append((server, e.kind, str(e)))',
          'print(discovered_servers())',
          'out',
        ].join('\n'),
      );
      assert.equal(structured(result).status, 'ok', textOf(result));
      assert.match(
        String(structured(result).value),
        /\('userinfo', 'unavailable'.*\('query', 'unavailable'.*\('path', 'unavailable'/,
        textOf(result),
      );
      const catalogFile = join(bridge.stateDir, CATALOG_FILE);
      const catalog = await until('all three failures in catalog.json', () => {
        const text = existsSync(catalogFile) ? readFileSync(catalogFile, 'utf8') : '';
        return ['userinfo', 'query', 'path'].every((name) => new RegExp(`"${name}":\\{[^}]*"state":"error"`).test(text)) && text;
      });
      const runLog = await readFile(join(bridge.stateDir, RUN_LOG_FILE), 'utf8');
      assert.match(runLog, /"type":"tool-call".*"server":"userinfo".*"outcome":"failed"/);
      // The log says where each server is, without its credentials.
      await until('the start failures in the log', () =>
        /server "userinfo" failed to start: .*http:\/\/\*\*\*@127\.0\.0\.1/.test(bridge.stderr()),
      );
      for (const [where, text] of [
        ['result', textOf(result)],
        ['catalog.json', catalog],
        ['stderr', bridge.stderr()],
        ['run log', runLog],
      ] as const) {
        for (const secret of secrets) assert.ok(!text.includes(secret), `${where} has ${secret}:\n${text}`);
      }
    } finally {
      await bridge.close();
    }
  });
});

/** A loopback port nothing listens on (taken, then given back). */
async function closedLoopbackPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
