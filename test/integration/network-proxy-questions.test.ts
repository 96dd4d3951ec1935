// The sandbox's network end to end: the real bridge (createBridge, in this process), a real
// container, the real egress proxy, and a real MCP SDK client that answers the bridge's network
// questions. A loopback server of the test's is reached through its exact 127.0.0.1:PORT entry;
// a host that is not listed is asked about (decline: 403; accept as offered: let through to its
// name's resolution, which fails here: no DNS), and every request is in the run log under its run.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  ElicitRequestSchema,
  type CallToolResult,
  type ElicitRequestFormParams,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { NETWORK_ALWAYS, NETWORK_FIELD } from '../../src/bridge/client/network-questions.ts';
import { CLIENT_ENV, createBridge, type Bridge } from '../../src/bridge/server.ts';
import { parseConfig } from '../../src/config/load.ts';
import { parseRunLog } from '../../src/state/run-log/reader.ts';
import { RUN_LOG_FILE } from '../../src/state/run-log/writer.ts';
import { structured, tempDir, textOf } from '../helpers/bridge.ts';
import { testRuntimes, testSandbox } from '../helpers/env.ts';

const [runtime = 'podman'] = testRuntimes();

const fetch = (url: string) => `
import urllib.request, urllib.error
try:
    with urllib.request.urlopen(${JSON.stringify(url)}, timeout=20) as r:
        print("status", r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print("status", e.code, e.read().decode().strip())
`;

describe(`the sandbox's network through the bridge and its proxy (${runtime})`, { timeout: 600_000 }, () => {
  let origin: Server;
  let port: number;
  let bridge: Bridge;
  let client: Client;
  let stateDir: string;
  const config = (allow: string[]) =>
    parseConfig({ stateDir, servers: {}, sandbox: { ...testSandbox(runtime), prewarm: false, network: { allow, ask: true } } });
  const questions: ElicitRequestFormParams[] = [];
  let answer: () => ElicitResult = () => ({ action: 'decline' });
  const run = async (code: string) =>
    (await client.callTool({ name: 'run_python', arguments: { code } }, undefined, { timeout: 120_000 })) as CallToolResult;

  before(async () => {
    origin = createServer((_req, res) => res.end('hello from the host'));
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    port = (origin.address() as AddressInfo).port;
    stateDir = join(await tempDir('cem-network-proxy-'), 'state');
    bridge = await createBridge(config([`127.0.0.1:${port}`]));
    client = new Client({ name: 'network-proxy-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      questions.push(request.params as ElicitRequestFormParams);
      return answer();
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await Promise.all([bridge.server.connect(serverSide), client.connect(clientSide)]);
  });
  after(async () => {
    await client?.close();
    await bridge?.close();
    origin?.close();
  });

  test('a listed server is reached; nobody is asked', async () => {
    const result = await run(fetch(`http://127.0.0.1:${port}/x`));
    assert.match(textOf(result), /status 200 hello from the host/);
    assert.equal(questions.length, 0);
  });

  test('an unlisted host is asked about: declined, the code gets a 403 saying so', async () => {
    answer = () => ({ action: 'decline' });
    const result = await run(fetch('http://unlisted.example/'));
    assert.equal(structured(result).status, 'ok', textOf(result));
    assert.match(textOf(result), /status 403/);
    assert.equal(questions.at(-1)!.message, 'Code Execution Mode: allow the sandbox to reach unlisted.example:80?');
  });

  test('accepted as offered: the request goes on to the checks after resolution, which still refuse a loopback address', async () => {
    // localhost resolves from the hosts file: no name server is asked, and a yes never opens loopback.
    answer = () => ({ action: 'accept' });
    const result = await run(fetch(`http://localhost:${port}/x`));
    assert.match(textOf(result), /status 403/);
    assert.match(textOf(result), /loopback address/);
    assert.equal(questions.length, 2);
    assert.equal(questions.at(-1)!.message, `Code Execution Mode: allow the sandbox to reach localhost:${port}?`);
  });

  test('each request and answer is in the run log under its run', () => {
    const runs = parseRunLog(readFileSync(join(stateDir, RUN_LOG_FILE), 'utf8'));
    const egress = runs.flatMap((r) => r.egress.map((e) => ({ host: e.host, decision: e.decision, bytesIn: e.bytesIn, method: e.method })));
    assert.equal(egress.length, 3, JSON.stringify(egress));
    assert.deepEqual(egress[0]!.host, '127.0.0.1');
    assert.equal(egress[0]!.decision, 'allowed');
    assert.equal(egress[0]!.method, 'GET');
    assert.ok(egress[0]!.bytesIn > 0);
    assert.equal(egress[1]!.decision, 'denied');
    assert.equal(egress[2]!.decision, 'private');
    assert.deepEqual(
      runs.flatMap((r) => r.networkQuestions.map((q) => q.answer)),
      ['declined', 'once'],
    );
  });

  test('"always" taken back (Undo rewrites sandbox.network.allow): the same session\'s next request is asked again', async (t) => {
    // The bridge VS Code starts: there, "always" lives in the user's setting, which decides from then on.
    const client = process.env[CLIENT_ENV];
    process.env[CLIENT_ENV] = 'vscode';
    t.after(() => (client === undefined ? delete process.env[CLIENT_ENV] : (process.env[CLIENT_ENV] = client)));
    const asked = questions.length;
    const decisions = () =>
      parseRunLog(readFileSync(join(stateDir, RUN_LOG_FILE), 'utf8'))
        .flatMap((r) => r.egress)
        .slice(3)
        .map((e) => e.decision);
    // localhost resolves from the hosts file; "private" after the answer means the policy let it through to resolution.
    answer = () => ({ action: 'accept', content: { [NETWORK_FIELD]: NETWORK_ALWAYS } });
    assert.match(textOf(await run(fetch(`http://localhost:${port}/a`))), /status 403.*loopback address/s);
    assert.match(textOf(await run(fetch(`http://localhost:${port}/b`))), /status 403.*loopback address/s);
    assert.equal(questions.length, asked + 1, 'asked once: "always" holds');
    // The extension adds the host to the setting, then Undo takes it out again: two reloads.
    await bridge.reconfigure(config([`127.0.0.1:${port}`, `localhost:${port}`]));
    await bridge.reconfigure(config([`127.0.0.1:${port}`]));
    answer = () => ({ action: 'decline' });
    const refused = textOf(await run(fetch(`http://localhost:${port}/c`)));
    assert.match(refused, /status 403/);
    assert.doesNotMatch(refused, /loopback address/);
    assert.equal(questions.length, asked + 2, 'asked again after Undo');
    assert.equal(questions.at(-1)!.message, `Code Execution Mode: allow the sandbox to reach localhost:${port}?`);
    assert.deepEqual(decisions(), ['private', 'private', 'denied']);
  });
});
