// Consent to what a workspace defines: the hash of a definition (what changes it and what does
// not), what the question shows (names of env variables and headers, never their values), the
// decisions file, which scope defines a setting, and the bridge's gate reading decisions live.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConsentGate, consentRequestSchema, type ConsentState } from '../../src/bridge/hub/consent.ts';
import { configSchema } from '../../src/config/schema.ts';
import {
  canonicalJson,
  decisionsFileOf,
  notAllowed,
  questionText,
  sandboxConsentItem,
  serverConsentItem,
  serverFacts,
  type ConsentLocation,
  type DecisionStore,
} from '../../src/extension/consent-items.ts';
import { entryScope, workspaceScope } from '../../src/extension/trusted-settings.ts';
import { sleep } from '../helpers/wait.ts';

const here: ConsentLocation = { scope: 'workspace', id: 'file:///repo/.vscode/settings.json', label: 'the folder settings /repo/.vscode/settings.json' };
const entry = { command: 'node', args: ['server.js', '--root', 'a b'], env: { TOKEN: 'secret-value', HOME_DIR: '/x' }, cwd: '${workspaceFolder}' };


test('canonical JSON sorts keys at every level and drops undefined', () => {
  assert.equal(canonicalJson({ b: 1, a: { d: [2, { f: 1, e: 0 }], c: undefined } }), '{"a":{"d":[2,{"e":0,"f":1}]},"b":1}');
});

test('a definition hashes the same whatever its key order, and ignores enabled and description', () => {
  const item = serverConsentItem('tool', entry, here, '/repo');
  const reordered = serverConsentItem('tool', { cwd: entry.cwd, env: { HOME_DIR: '/x', TOKEN: 'secret-value' }, args: entry.args, command: 'node' }, here, '/repo');
  assert.equal(item.hash, reordered.hash);
  assert.match(item.hash, /^[0-9a-f]{32}$/);
  assert.equal(serverConsentItem('tool', { ...entry, enabled: false, description: 'now described' }, here, '/repo').hash, item.hash);
});

test('anything that changes what runs, or where, changes the hash', () => {
  const base = serverConsentItem('tool', entry, here, '/repo').hash;
  const variants = [
    serverConsentItem('tool', { ...entry, args: [...entry.args, '--more'] }, here, '/repo'),
    serverConsentItem('tool', { ...entry, command: 'python3' }, here, '/repo'),
    serverConsentItem('tool', { ...entry, env: { ...entry.env, TOKEN: 'other' } }, here, '/repo'),
    serverConsentItem('tool', { ...entry, cwd: '/tmp' }, here, '/repo'),
    serverConsentItem('other-name', entry, here, '/repo'),
    // The same entry in another workspace: ${workspaceFolder} points elsewhere.
    serverConsentItem('tool', entry, { ...here, id: 'file:///elsewhere/.vscode/settings.json' }, '/repo'),
    serverConsentItem('tool', entry, here, '/elsewhere'),
  ].map((i) => i.hash);
  for (const hash of variants) assert.notEqual(hash, base);
  assert.equal(new Set(variants).size, variants.length);
});

test('the facts show the command, arguments, cwd and the NAMES of env variables and headers, never their values', () => {
  assert.deepEqual(serverFacts(entry), [
    'command: node',
    'arguments: server.js --root "a b"',
    'environment: HOME_DIR, TOKEN (values not shown)',
    'working folder: ${workspaceFolder}',
  ]);
  assert.deepEqual(serverFacts({ url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer xyz' } }), [
    'URL: https://mcp.example.com/mcp',
    'headers: Authorization (values not shown)',
  ]);
  const { message, detail } = questionText([serverConsentItem('tool', entry, here, '/repo'), sandboxConsentItem('sandbox.image', 'evil/image:1', here)]);
  assert.match(message, /run 1 MCP server and use 1 sandbox setting/);
  assert.match(detail, /MCP server "tool"\n {2}defined in the folder settings \/repo\/\.vscode\/settings\.json\n {2}command: node/);
  assert.match(detail, /setting codeExecutionMode\.sandbox\.image[\s\S]*value: "evil\/image:1"/);
  assert.ok(!detail.includes('secret-value'), 'an env value reached the question');
  assert.match(questionText([serverConsentItem('tool', entry, here, undefined)]).message, /^This workspace wants to run MCP server "tool"\. Allow it\?$/);
});

test('sandbox values hash by key, value and place', () => {
  const a = sandboxConsentItem('sandbox.extraRunArgs', ['--ulimit', 'nofile=64'], here);
  assert.deepEqual(a.facts, ['value: --ulimit nofile=64']);
  assert.notEqual(a.hash, sandboxConsentItem('sandbox.extraRunArgs', ['--ulimit', 'nofile=65'], here).hash);
  assert.notEqual(sandboxConsentItem('sandbox.image', 'x', here).hash, sandboxConsentItem('sandbox.runtime', 'x', here).hash);
});

test('only an "allowed" decision lets an item through; the decisions file lists both kinds', () => {
  const items = ['a', 'b', 'c'].map((name) => serverConsentItem(name, entry, here, undefined));
  const record = (decision: 'allowed' | 'denied') => ({ decision, kind: 'server' as const, name: 'x', where: 'w', facts: [], at: '2026-01-01T00:00:00.000Z' });
  const store: DecisionStore = { [items[0]!.hash]: record('allowed'), [items[1]!.hash]: record('denied') };
  assert.deepEqual(
    notAllowed(items, (hash) => store[hash]?.decision).map((i) => i.name),
    ['b', 'c'],
  );
  assert.deepEqual(decisionsFileOf(store), { version: 1, allowed: [items[0]!.hash], denied: [items[1]!.hash] });
});

test('which workspace scope defines a setting, or one entry of the servers object', () => {
  assert.equal(workspaceScope({ globalValue: 'a' }), undefined);
  assert.equal(workspaceScope({ workspaceValue: 'a' }), 'workspace');
  assert.equal(workspaceScope({ workspaceValue: 'a', workspaceFolderValue: 'b' }), 'workspaceFolder');
  const servers = { globalValue: { mine: {} }, workspaceValue: { theirs: {}, mine: { command: 'x' } } };
  assert.equal(entryScope(servers, 'mine'), 'workspace', 'a workspace changing a user entry is asked about');
  assert.equal(entryScope(servers, 'theirs'), 'workspace');
  assert.equal(entryScope({ globalValue: { mine: {} } }, 'mine'), undefined);
  assert.equal(entryScope({ workspaceValue: { toString: {} } }, 'hasOwnProperty'), undefined);
  // Enabling or describing a user's server changes nothing that runs.
  const inert = new Set(['enabled', 'description']);
  assert.equal(entryScope({ globalValue: { mine: { command: 'x' } }, workspaceValue: { mine: { enabled: false, description: 'd' } } }, 'mine', inert), undefined);
  assert.equal(entryScope({ globalValue: { mine: { command: 'x' } }, workspaceValue: { mine: { enabled: true, denyTools: [] } } }, 'mine', inert), 'workspace');
  assert.equal(entryScope({ workspaceValue: { theirs: {} } }, 'theirs', inert), 'workspace', 'an empty entry is not inert');
});

test('the configuration accepts consent and refuses a malformed hash', () => {
  const consent = { decisionsFile: '/d.json', requestsFile: '/r.json', servers: { ws: 'a'.repeat(32) } };
  assert.deepEqual(configSchema.parse({ consent }).consent, consent);
  assert.equal(configSchema.safeParse({ consent: { ...consent, servers: { ws: 'not a hash' } } }).success, false);
});

test('the gate reads decisions live, fails closed, and asks once for several servers', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-consent-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const decisionsFile = join(dir, 'decisions.json');
  const requestsFile = join(dir, 'requests.json');
  const [h1, h2] = ['1'.repeat(32), '2'.repeat(32)];
  const logs: string[] = [];
  const gate = new ConsentGate({ decisionsFile, requestsFile, servers: { one: h1, two: h2 } }, (line) => logs.push(line));
  t.after(() => gate.close());
  const decide = (allowed: string[], denied: string[] = []) => {
    // A new file each time, as the extension writes it (temp file + rename).
    rmSync(decisionsFile, { force: true });
    writeFileSync(decisionsFile, JSON.stringify({ version: 1, allowed, denied }));
  };

  assert.equal(gate.state('free'), 'allowed', 'a server that needs no consent');
  assert.equal(gate.state('one'), 'awaiting-consent', 'no decisions file: nothing allowed');
  gate.request(['one', 'two', 'free']);
  const request = await waitForFile(requestsFile);
  assert.deepEqual(consentRequestSchema.parse(request).servers, [{ name: 'one', hash: h1 }, { name: 'two', hash: h2 }]);
  assert.match(gate.reason('one'), /has not allowed it to run yet; they have been asked/);

  const changes: Array<[string, ConsentState]> = [];
  const checks: Array<[string, ConsentState]> = [];
  gate.watch((server, state, changed) => {
    checks.push([server, state]);
    if (changed) changes.push([server, state]);
  });
  decide([h1], [h2]);
  assert.equal(gate.state('one'), 'allowed');
  assert.equal(gate.state('two'), 'declined');
  assert.match(gate.reason('two'), /did not allow server "two".*Manage Server Consent/);
  rmSync(requestsFile);
  gate.request(['one', 'two']);
  await sleep(100);
  assert.equal(existsSync(requestsFile), false, 'decided servers are not asked about');

  await waitUntil('the watcher to see the decisions', () => changes.length >= 2);
  assert.deepEqual(changes.sort(), [['one', 'allowed'], ['two', 'declined']]);
  // Every check reports every state, changed or not (the hub stops what is not allowed, even
  // when it was allowed and revoked between two checks).
  await waitUntil('a check with no change', () => checks.length >= 4);
  assert.deepEqual(checks.slice(2, 4).sort(), [['one', 'allowed'], ['two', 'declined']]);
  assert.equal(changes.length, 2);
  writeFileSync(decisionsFile, '{ not json');
  // An allowed state holds until the next poll (at most a second).
  await waitUntil('the poll to read the broken decisions', () => gate.state('one') === 'awaiting-consent', 3000);
  assert.ok(logs.some((l) => l.includes('cannot be read')));
});

test('the gate trusts an allowed state until the next poll, and looks again at once at one that is not', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-consent-cache-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const decisionsFile = join(dir, 'decisions.json');
  const hash = '3'.repeat(32);
  const gate = new ConsentGate({ decisionsFile, requestsFile: join(dir, 'requests.json'), servers: { ws: hash } });
  t.after(() => gate.close());
  const decide = (allowed: string[]) => {
    rmSync(decisionsFile, { force: true });
    writeFileSync(decisionsFile, JSON.stringify({ version: 1, allowed, denied: [] }));
  };
  assert.equal(gate.state('ws'), 'awaiting-consent');
  decide([hash]);
  assert.equal(gate.state('ws'), 'allowed', 'allowing takes effect at once');
  decide([]);
  // Within the poll interval the allowed state is not looked at again (no stat per check)...
  for (let i = 0; i < 20; i++) assert.equal(gate.state('ws'), 'allowed');
  // ...and the next poll sees the revocation.
  const seen: ConsentState[] = [];
  gate.watch((_server, state) => seen.push(state));
  await waitUntil('the poll', () => seen.length > 0, 3000);
  assert.equal(seen[0], 'awaiting-consent');
  assert.equal(gate.state('ws'), 'awaiting-consent');
});

async function waitUntil(what: string, probe: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

async function waitForFile(path: string): Promise<unknown> {
  await waitUntil(path, () => existsSync(path));
  return JSON.parse(readFileSync(path, 'utf8'));
}
