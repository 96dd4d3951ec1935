// Consent to what a workspace defines: the hash of a definition (what changes it and what does
// not), what the question shows (env variables and headers by name, plain values shown, secret
// ones masked, hidden characters escaped), sandbox values and limits kept at the user's until
// allowed, the decisions file, which scope defines a setting, and the bridge's gate reading
// decisions live.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConsentGate, consentRequestSchema, type ConsentState } from '../../src/state/consent.ts';
import { configSchema } from '../../src/config/schema.ts';
import {
  canonicalJson,
  decisionsFileOf,
  notAllowed,
  questionText,
  sandboxConsentItem,
  sandboxSetting,
  serverConsentItem,
  serverFacts,
  type ConsentLocation,
  type DecisionStore,
} from '../../src/extension/settings/consent-items.ts';
import {
  CONSENT_SANDBOX_KEYS,
  entryScope,
  SANDBOX_SETTING_KEYS,
  workspaceScope,
  type InspectedSetting,
} from '../../src/extension/settings/trusted-settings.ts';
import { FakeClock } from '../helpers/fake-clock.ts';
import { until } from '../helpers/wait.ts';

const here: ConsentLocation = {
  scope: 'workspace',
  id: 'file:///repo/.vscode/settings.json',
  label: 'the folder settings /repo/.vscode/settings.json',
};
const entry = {
  command: 'node',
  args: ['server.js', '--root', 'a b'],
  env: { TOKEN: 'secret-value', HOME_DIR: '/x' },
  cwd: '${workspaceFolder}',
};

test('canonical JSON sorts keys at every level and drops undefined', () => {
  assert.equal(canonicalJson({ b: 1, a: { d: [2, { f: 1, e: 0 }], c: undefined } }), '{"a":{"d":[2,{"e":0,"f":1}]},"b":1}');
});

test('a definition hashes the same whatever its key order, and ignores enabled and description', () => {
  const item = serverConsentItem('tool', entry, here, '/repo');
  const reordered = serverConsentItem(
    'tool',
    { cwd: entry.cwd, env: { HOME_DIR: '/x', TOKEN: 'secret-value' }, args: entry.args, command: 'node' },
    here,
    '/repo',
  );
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

test('the facts show the command, arguments, cwd, and each env variable and header: plain values shown, secrets masked but named', () => {
  assert.deepEqual(serverFacts(entry), [
    'command: node',
    'arguments: server.js --root "a b"',
    'env HOME_DIR=/x',
    'env TOKEN=*** (secret, not shown)',
    'working folder: ${workspaceFolder}',
  ]);
  const stdio = serverFacts({
    command: 'node',
    env: {
      DEBUG: '1',
      NODE_OPTIONS: '--require ./hook.js',
      API_KEY: 'plain-looking',
      DB_PASSWORD: 'hunter2',
      CLIENT_SECRET: 'x',
      MY_AUTH: 'y',
      FROM_INPUT: '${input:api-token}',
      ANY_NAME: 'ghp_0123456789abcdefghijklmnopqrstuvwxyz',
      LOOKS_LIKE_A_KEY: 'Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5',
    },
  });
  for (const plain of ['env DEBUG=1', 'env NODE_OPTIONS="--require ./hook.js"'])
    assert.ok(stdio.includes(plain), `${plain} in ${stdio.join('\n')}`);
  for (const name of ['API_KEY', 'DB_PASSWORD', 'CLIENT_SECRET', 'MY_AUTH', 'FROM_INPUT', 'ANY_NAME', 'LOOKS_LIKE_A_KEY']) {
    assert.ok(stdio.includes(`env ${name}=*** (secret, not shown)`), `${name} not masked: ${stdio.join('\n')}`);
  }
  for (const secret of ['plain-looking', 'hunter2', 'api-token', 'ghp_', 'Zm9v'])
    assert.ok(!stdio.join('\n').includes(secret), `${secret} shown`);
  assert.deepEqual(
    serverFacts({
      url: 'https://user:pa55@mcp.example.com/mcp?access_token=abc&page=2',
      headers: { Authorization: 'xyz', 'Proxy-Authorization': 'Basic Zm9v', 'X-Custom': 'Bearer abc', 'X-Trace': 'on', 'X-Api-Key': 'k' },
    }),
    [
      'URL: https://***@mcp.example.com/mcp?access_token=***&page=2',
      'header Authorization: *** (secret, not shown)',
      'header Proxy-Authorization: *** (secret, not shown)',
      'header X-Api-Key: *** (secret, not shown)',
      'header X-Custom: *** (secret, not shown)',
      'header X-Trace: on',
    ],
  );
  const { message, detail } = questionText([
    serverConsentItem('tool', entry, here, '/repo'),
    sandboxConsentItem('sandbox.image', 'evil/image:1', here),
  ]);
  assert.match(message, /run 1 MCP server and use 1 sandbox setting/);
  assert.match(detail, /MCP server "tool"\n {2}defined in the folder settings \/repo\/\.vscode\/settings\.json\n {2}command: node/);
  assert.match(detail, /setting codeExecutionMode\.sandbox\.image[\s\S]*value: "evil\/image:1"/);
  assert.ok(!detail.includes('secret-value'), 'a secret env value reached the question');
  assert.match(detail, / {2}env HOME_DIR=\/x\n {2}env TOKEN=\*\*\* \(secret, not shown\)/);
  assert.match(
    questionText([serverConsentItem('tool', entry, here, undefined)]).message,
    /^This workspace wants to run MCP server "tool"\. Allow it\?$/,
  );
});

test('control, bidi and invisible characters in what the question shows are escaped visibly; long values and lists are capped', () => {
  const facts = serverFacts({
    command: 'node\u202e',
    args: ['report\u202etxt.exe', 'x\x1b]52;c;AAAA\x07', 'zero\u200bwidth'],
    env: { LOG_FILE: 'a\nb\u2066c\u00a0d', PLAIN: 'ok' },
    cwd: '/tmp/\u202ex',
  });
  assert.deepEqual(facts, [
    'command: "node\\u{202E}"',
    'arguments: "report\\u{202E}txt.exe" "x\\u{1B}]52;c;AAAA\\u{7}" "zero\\u{200B}width"',
    'env LOG_FILE="a\\nb\\u{2066}c\\u{A0}d"',
    'env PLAIN=ok',
    'working folder: "/tmp/\\u{202E}x"',
  ]);
  const headers = serverFacts({ url: 'https://example.com/mcp', headers: { 'X-Note': 'line\r\nInjected: yes\ufeff' } });
  assert.deepEqual(headers, ['URL: https://example.com/mcp', 'header X-Note: "line\\r\\nInjected: yes\\u{FEFF}"']);
  const item = sandboxConsentItem('sandbox.image', 'evil\u202e/image:1', {
    ...here,
    label: 'the folder settings /repo\u202e/.vscode/settings.json',
  });
  const { detail } = questionText([serverConsentItem('tool', { command: 'node\u202e', env: { X: '\u0007' } }, here, undefined), item]);
  assert.doesNotMatch(
    detail,
    /[\u0000-\u0008\u000b-\u001f\u007f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/u,
    'a hidden character reached the question',
  );
  assert.match(detail, /value: "evil\\u\{202E\}\/image:1"/);
  assert.match(detail, /defined in the folder settings \/repo\\u\{202E\}\/\.vscode/);

  // A long value is cut, with its length said; past 30 variables, the rest are named on one line.
  const long = serverFacts({ command: 'node', env: { BIG: 'x'.repeat(5000) } })[1]!;
  assert.ok(long.length < 260 && long.endsWith('… (5000 characters in all)'), long);
  const many = serverFacts({
    command: 'node',
    env: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`V${String(i).padStart(2, '0')}`, String(i)])),
  });
  assert.equal(many.filter((f) => f.startsWith('env V')).length, 30);
  assert.equal(many.at(-1), 'env: 10 more, values not shown: V30, V31, V32, V33, V34, V35, V36, V37, V38, V39');
  // A cut never splits an escape.
  const escaped = serverFacts({ command: 'node', env: { E: '\u202e'.repeat(100) } })[1]!;
  assert.match(escaped, /\\u\{202E\}… \(\d+ characters in all\)$/);
});

test('a trusted workspace raising memory, pids, maxSessions (any limit) gets your value until you allow it', () => {
  for (const key of ['memory', 'cpus', 'pids', 'timeoutSeconds', 'maxTimeoutSeconds', 'idleSeconds', 'maxSessions'] as const)
    assert.ok(CONSENT_SANDBOX_KEYS.includes(key), key);
  assert.deepEqual([...CONSENT_SANDBOX_KEYS], [...SANDBOX_SETTING_KEYS]);
  const decisions = new Map<string, 'allowed' | 'denied'>();
  const read = <T>(key: (typeof SANDBOX_SETTING_KEYS)[number], inspected: InspectedSetting<T>, trusted = true) => {
    const resolved = inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue ?? inspected.defaultValue;
    return sandboxSetting(
      key,
      inspected,
      trusted,
      resolved,
      (scope) => ({ ...here, scope }),
      (hash) => decisions.get(hash),
    );
  };
  const cases = [
    { key: 'memory', inspected: { defaultValue: '512m', globalValue: '1g', workspaceValue: '64g' }, own: '1g', wanted: '64g' },
    { key: 'pids', inspected: { defaultValue: 128, workspaceFolderValue: 100000 }, own: 128, wanted: 100000 },
    { key: 'maxSessions', inspected: { defaultValue: 4, globalValue: 2, workspaceValue: 64 }, own: 2, wanted: 64 },
    { key: 'maxTimeoutSeconds', inspected: { defaultValue: 300, workspaceValue: 86400 }, own: 300, wanted: 86400 },
  ] as const;
  for (const { key, inspected, own, wanted } of cases) {
    const before = read(key, inspected as InspectedSetting<unknown>);
    assert.equal(before.value, own, `${key}: the workspace's value was used before consent`);
    assert.equal(before.item?.name, `sandbox.${key}`);
    assert.deepEqual(before.item?.facts, [
      `value: ${JSON.stringify(wanted)}`,
      `instead of: ${JSON.stringify(own)} (yours, or the default)`,
    ]);
    assert.equal(before.item?.where, here.label);
    decisions.set(before.item.hash, 'denied');
    assert.equal(read(key, inspected as InspectedSetting<unknown>).value, own, `${key}: used although declined`);
    decisions.set(before.item.hash, 'allowed');
    assert.equal(read(key, inspected as InspectedSetting<unknown>).value, wanted, `${key}: not used once allowed`);
  }
  // The same value as yours asks nothing; untrusted, the workspace's value is set aside (no question).
  assert.deepEqual(read('memory', { defaultValue: '512m', globalValue: '1g', workspaceValue: '1g' }), { value: '1g', ignored: false });
  assert.deepEqual(read('pids', { defaultValue: 128, workspaceValue: 4096 }, false), { value: 128, ignored: true });
  // Lowering counts too: any value other than yours is asked about.
  assert.equal(read('cpus', { defaultValue: 1, workspaceValue: 0.5 }).item?.name, 'sandbox.cpus');
});

test("sandbox.network: a workspace's hosts or ask need your consent when trusted, and are set aside when not", () => {
  const decisions = new Map<string, 'allowed' | 'denied'>();
  const read = <T>(key: (typeof SANDBOX_SETTING_KEYS)[number], inspected: InspectedSetting<T>, trusted = true) =>
    sandboxSetting(
      key,
      inspected,
      trusted,
      inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue ?? inspected.defaultValue,
      (scope) => ({ ...here, scope }),
      (hash) => decisions.get(hash),
    );
  const allow = { defaultValue: [], globalValue: ['pypi.org:443'], workspaceValue: ['*.evil.example', '127.0.0.1:22'] };
  const before = read('network.allow', allow);
  assert.deepEqual(before.value, ['pypi.org:443'], "the workspace's hosts were used before consent");
  assert.equal(before.item?.name, 'sandbox.network.allow');
  assert.match(before.item?.facts[0] ?? '', /\*\.evil\.example/);
  decisions.set(before.item!.hash, 'allowed');
  assert.deepEqual(read('network.allow', allow).value, allow.workspaceValue);
  const ask = read('network.ask', { defaultValue: false, workspaceValue: true });
  assert.equal(ask.value, false);
  assert.equal(ask.item?.name, 'sandbox.network.ask');
  assert.equal(
    read('network.maxBytesPerRun', { defaultValue: 1024, workspaceValue: 1 << 30 }).value,
    1024,
    'a cap is raised only with consent',
  );
  // Untrusted: the workspace's value is ignored, and nothing is asked.
  assert.deepEqual(read('network.allow', allow, false), { value: ['pypi.org:443'], ignored: true });
  assert.deepEqual(read('network.ask', { defaultValue: false, workspaceFolderValue: true }, false), { value: false, ignored: true });
});

test('sandbox values hash by key, value and place', () => {
  const a = sandboxConsentItem('sandbox.extraRunArgs', ['--ulimit', 'nofile=64'], here);
  assert.deepEqual(a.facts, ['value: --ulimit nofile=64']);
  assert.deepEqual(sandboxConsentItem('sandbox.extraRunArgs', ['--ulimit', 'nofile=64'], here, []).facts, [
    'value: --ulimit nofile=64',
    'instead of: (none) (yours, or the default)',
  ]);
  assert.equal(
    sandboxConsentItem('sandbox.extraRunArgs', ['--ulimit', 'nofile=64'], here, ['x']).hash,
    a.hash,
    'your value is not part of the hash',
  );
  assert.notEqual(a.hash, sandboxConsentItem('sandbox.extraRunArgs', ['--ulimit', 'nofile=65'], here).hash);
  assert.notEqual(sandboxConsentItem('sandbox.image', 'x', here).hash, sandboxConsentItem('sandbox.runtime', 'x', here).hash);
});

test('only an "allowed" decision lets an item through; the decisions file lists both kinds', () => {
  const items = ['a', 'b', 'c'].map((name) => serverConsentItem(name, entry, here, undefined));
  const record = (decision: 'allowed' | 'denied') => ({
    decision,
    kind: 'server' as const,
    name: 'x',
    where: 'w',
    facts: [],
    at: '2026-01-01T00:00:00.000Z',
  });
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
  assert.equal(
    entryScope({ globalValue: { mine: { command: 'x' } }, workspaceValue: { mine: { enabled: false, description: 'd' } } }, 'mine', inert),
    undefined,
  );
  assert.equal(
    entryScope({ globalValue: { mine: { command: 'x' } }, workspaceValue: { mine: { enabled: true, denyTools: [] } } }, 'mine', inert),
    'workspace',
  );
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
  const clock = new FakeClock();
  const gate = new ConsentGate({ decisionsFile, requestsFile, servers: { one: h1, two: h2 } }, (line) => logs.push(line), clock);
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
  assert.deepEqual(consentRequestSchema.parse(request).servers, [
    { name: 'one', hash: h1 },
    { name: 'two', hash: h2 },
  ]);
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
  // A request is decided (and said in the log) before request() returns; its file is written after.
  const asking = () => logs.filter((l) => l.startsWith('asking the user')).length;
  const asked = asking();
  gate.request(['one', 'two']);
  assert.equal(asking(), asked, 'decided servers are not asked about');
  assert.equal(existsSync(requestsFile), false);

  clock.advance(999);
  assert.equal(checks.length, 0, 'no check before the poll');
  clock.advance(1);
  assert.deepEqual(changes.sort(), [
    ['one', 'allowed'],
    ['two', 'declined'],
  ]);
  // Every check reports every state, changed or not (the hub stops what is not allowed, even
  // when it was allowed and revoked between two checks).
  clock.advance(1000);
  assert.deepEqual(checks.slice(2, 4).sort(), [
    ['one', 'allowed'],
    ['two', 'declined'],
  ]);
  assert.equal(changes.length, 2);
  writeFileSync(decisionsFile, '{ not json');
  // An allowed state holds until the next poll.
  clock.advance(999);
  assert.equal(gate.state('one'), 'allowed');
  clock.advance(1);
  assert.equal(gate.state('one'), 'awaiting-consent');
  assert.ok(logs.some((l) => l.includes('cannot be read')));
});

test('the gate trusts an allowed state until the next poll, and looks again at once at one that is not', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cem-consent-cache-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const decisionsFile = join(dir, 'decisions.json');
  const hash = '3'.repeat(32);
  const clock = new FakeClock();
  const gate = new ConsentGate({ decisionsFile, requestsFile: join(dir, 'requests.json'), servers: { ws: hash } }, undefined, clock);
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
  clock.advance(1000);
  assert.equal(seen[0], 'awaiting-consent');
  assert.equal(gate.state('ws'), 'awaiting-consent');
});

async function waitForFile(path: string): Promise<unknown> {
  await until(path, () => existsSync(path));
  return JSON.parse(readFileSync(path, 'utf8'));
}
