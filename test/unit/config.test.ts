import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, parseConfig } from '../../src/config/load.ts';

function errorOf(raw: unknown): string {
  try {
    parseConfig(raw);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.message;
  }
  assert.fail('expected a ConfigError');
}

test('defaults fill every sandbox setting', () => {
  const config = parseConfig({});
  assert.equal(config.sandbox.runtime, 'auto');
  assert.equal(config.sandbox.memory, '512m');
  assert.deepEqual(config.servers, {});
});

test('bad values are reported with the field that holds them', () => {
  assert.match(errorOf({ sandbox: { memory: 'lots' } }), /sandbox\.memory: must be a size/);
  assert.match(errorOf({ sandbox: { pids: 2 } }), /sandbox\.pids/);
  assert.match(errorOf({ sandbox: { runtime: 'lxc' } }), /sandbox\.runtime/);
  assert.match(errorOf({ sandbox: { timeoutSeconds: 500, maxTimeoutSeconds: 100 } }), /sandbox\.timeoutSeconds: timeoutSeconds must not exceed/);
  assert.match(errorOf({ sandbox: { colour: 'red' } }), /sandbox: Unrecognized key: "colour"/);
  assert.match(errorOf({ servers: { 'bad name!': { command: 'x' } } }), /servers\.bad name!/);
});

test('extra run arguments that would weaken the sandbox are refused', () => {
  for (const arg of ['--privileged', '--network=host', '--cap-add', '-v', '--security-opt=seccomp=unconfined', '--mount']) {
    assert.match(errorOf({ sandbox: { extraRunArgs: [arg] } }), /sandbox\.extraRunArgs\.0: this option would weaken the sandbox/, arg);
  }
  assert.deepEqual(parseConfig({ sandbox: { extraRunArgs: ['--ulimit', 'nofile=1024:1024'] } }).sandbox.extraRunArgs, [
    '--ulimit',
    'nofile=1024:1024',
  ]);
});

test('Claude Desktop mcpServers and VS Code servers shapes are both accepted', () => {
  const claude = parseConfig({ mcpServers: { memory: { command: 'npx', args: ['-y', 'x'] } } });
  assert.equal(claude.servers.memory && 'command' in claude.servers.memory && claude.servers.memory.command, 'npx');
  const vscode = parseConfig({ servers: { docs: { type: 'http', url: 'http://127.0.0.1:8931/mcp' } } });
  assert.equal(vscode.servers.docs && 'url' in vscode.servers.docs && vscode.servers.docs.url, 'http://127.0.0.1:8931/mcp');
  assert.match(errorOf({ servers: { a: { command: 'x' } }, mcpServers: {} }), /either "servers" or "mcpServers"/);
});
