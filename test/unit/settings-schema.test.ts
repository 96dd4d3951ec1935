// package.json's settings are generated from the configuration's zod schema
// (`npm run settings-schema`): these tests fail when the two drift apart, and when a key of the
// configuration has neither a VS Code setting nor a reason it has none; and the Settings editor
// lists them in the order a person sets the sandbox up.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { cliOnlyKeys, configSchema, proxyConfigSchema, runLogConfigSchema, sandboxConfigSchema } from '../../src/config/schema.ts';
import { mirroredSettings, nestedSandboxSettings, renderManifest, settingOrders } from '../../src/extension/settings/manifest-settings.ts';

const manifestText = readFileSync('package.json', 'utf8');
type Manifest = { contributes: { configuration: { properties: Record<string, Record<string, unknown>> } } };

test('package.json holds the settings exactly as `npm run settings-schema` writes them', () => {
  assert.equal(
    renderManifest(manifestText),
    manifestText,
    'package.json differs from the configuration schema: run `npm run settings-schema`',
  );
});

test('the generation replaces a stale range or type and keeps what a person wrote', () => {
  const manifest = JSON.parse(manifestText) as Manifest;
  const cpus = manifest.contributes.configuration.properties['codeExecutionMode.sandbox.cpus']!;
  const written = { ...cpus };
  cpus.minimum = 0.1;
  delete cpus.maximum;
  cpus.type = 'integer';
  const rendered = JSON.parse(renderManifest(`${JSON.stringify(manifest, null, 2)}\n`)) as Manifest;
  assert.deepEqual(rendered.contributes.configuration.properties['codeExecutionMode.sandbox.cpus'], written);
  assert.equal(written.exclusiveMinimum, 0);
  assert.equal(written.maximum, 64);
});

test('a setting missing from package.json, or one that mirrors no configuration key, is an error', () => {
  const missing = JSON.parse(manifestText) as Manifest;
  delete missing.contributes.configuration.properties['codeExecutionMode.proxy.callTimeoutSeconds'];
  assert.throws(() => renderManifest(JSON.stringify(missing)), /add these settings.*codeExecutionMode\.proxy\.callTimeoutSeconds/);
  const extra = JSON.parse(manifestText) as Manifest;
  extra.contributes.configuration.properties['codeExecutionMode.sandbox.nothing'] = { type: 'string', description: 'x' };
  assert.throws(() => renderManifest(JSON.stringify(extra)), /mirror no configuration key.*codeExecutionMode\.sandbox\.nothing/);
});

test('every configuration key has a VS Code setting or a reason it is CLI-only, never both', () => {
  const keys = [
    ...Object.keys(configSchema.in.shape).filter((key) => !['sandbox', 'proxy', 'runLog'].includes(key)),
    // sandbox.network: a setting per key of it.
    ...Object.keys(sandboxConfigSchema.shape)
      .filter((key) => key !== 'network')
      .map((key) => `sandbox.${key}`),
    ...Object.keys(sandboxConfigSchema.shape.network.unwrap().shape).map((key) => `sandbox.network.${key}`),
    ...Object.keys(proxyConfigSchema.shape).map((key) => `proxy.${key}`),
    ...Object.keys(runLogConfigSchema.shape).map((key) => `runLog.${key}`),
  ];
  const mirrored = new Set(Object.values(mirroredSettings()).map((setting) => setting.config));
  const cliOnly = cliOnlyKeys();
  assert.deepEqual(
    keys.filter((key) => !mirrored.has(key) && !cliOnly[key]),
    [],
    'keys with neither a setting nor a cliOnly reason',
  );
  assert.deepEqual(
    keys.filter((key) => mirrored.has(key) && cliOnly[key]),
    [],
    'keys with a setting and a cliOnly reason',
  );
  assert.deepEqual(
    [...mirrored].filter((key) => !keys.includes(key)),
    [],
    'settings that mirror no key',
  );
});

test('each setting defaults to what the configuration defaults to', () => {
  const properties = (JSON.parse(manifestText) as Manifest).contributes.configuration.properties;
  const defaults = configSchema.parse({});
  for (const [name, { config }] of Object.entries(mirroredSettings())) {
    if (config === 'servers' || config === 'sandbox.workspace') continue;
    const value = config.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], defaults);
    // A key without a default is absent: the setting's "" says so.
    assert.deepEqual(properties[name]!.default, value ?? '', name);
  }
});

test('the Settings editor lists backend and runtime, image, servers, limits, then the advanced settings', () => {
  const properties = (JSON.parse(manifestText) as Manifest).contributes.configuration.properties;
  const order = (name: string) => properties[`codeExecutionMode.${name}`]!.order as number;
  const orders = Object.values(properties).map((p) => p.order);
  assert.ok(
    orders.every((o) => typeof o === 'number'),
    'every setting has an order',
  );
  assert.equal(new Set(orders).size, orders.length, 'no two settings share an order');
  assert.deepEqual(Object.fromEntries(Object.keys(properties).map((name) => [name, properties[name]!.order])), settingOrders());
  const sequence = [
    'sandbox.backend',
    'sandbox.runtime',
    'sandbox.image',
    'servers',
    'sandbox.memory',
    'sandbox.podmanPath',
    'proxy.callTimeoutSeconds',
  ];
  assert.deepEqual(
    [...sequence].sort((a, b) => order(a) - order(b)),
    sequence,
  );
  // Every limit of a run comes before every advanced setting.
  const limits = ['sandbox.timeoutSeconds', 'sandbox.memory', 'sandbox.cpus', 'sandbox.pids', 'sandbox.maxSessions'];
  const advanced = ['sandbox.runtimeOrder', 'sandbox.extraRunArgs', 'sandbox.ociRuntime', 'runLog.keepFiles'];
  assert.ok(Math.max(...limits.map(order)) < Math.min(...advanced.map(order)));
});

test('the servers setting links to the commands that list and edit them, each one the extension contributes', () => {
  const manifest = JSON.parse(manifestText) as Manifest & { contributes: { commands: Array<{ command: string }> } };
  const text = manifest.contributes.configuration.properties['codeExecutionMode.servers']!.markdownDescription as string;
  const linked = [...text.matchAll(/\]\(command:([\w.]+)\)/g)].map((m) => m[1]!);
  for (const id of ['addServer', 'editServer', 'enableServer', 'disableServer', 'removeServer', 'importServers'])
    assert.ok(linked.includes(`codeExecutionMode.${id}`), `no link to ${id}`);
  const contributed = new Set(manifest.contributes.commands.map((c) => c.command));
  // A view's ".focus" command is VS Code's own.
  assert.deepEqual(
    linked.filter((id) => !contributed.has(id) && !id.endsWith('.focus')),
    [],
  );
});

test("the sandbox.network settings nest into the configuration's sandbox.network", () => {
  const settings = mirroredSettings();
  for (const key of ['allow', 'ask', 'maxRequestsPerRun', 'maxBytesPerRun', 'maxConnections'])
    assert.equal(settings[`codeExecutionMode.sandbox.network.${key}`]?.config, `sandbox.network.${key}`);
  const nested = nestedSandboxSettings({ memory: '1g', 'network.allow': ['api.example.com:443'], 'network.ask': true });
  assert.deepEqual(nested, { memory: '1g', network: { allow: ['api.example.com:443'], ask: true } });
  const parsed = sandboxConfigSchema.parse(nested);
  assert.deepEqual(parsed.network.allow, ['api.example.com:443']);
  assert.equal(parsed.network.maxConnections, 16);
  assert.deepEqual(nestedSandboxSettings({ memory: '1g' }), { memory: '1g' });
  assert.equal(sandboxConfigSchema.safeParse(nestedSandboxSettings({ 'network.allow': ['*'] })).success, false);
});
