import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, describeIssues, parseConfig } from '../../src/config/load.ts';
import { z } from 'zod';

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
  assert.match(
    errorOf({ sandbox: { timeoutSeconds: 500, maxTimeoutSeconds: 100 } }),
    /sandbox\.timeoutSeconds: timeoutSeconds must not exceed/,
  );
  assert.match(errorOf({ sandbox: { colour: 'red' } }), /sandbox: Unrecognized key: "colour"/);
  assert.match(errorOf({ servers: { 'bad name!': { command: 'x' } } }), /servers\.bad name!/);
});

test('extra run arguments are an allow-list: every form that could weaken the sandbox is refused, naming the token', () => {
  const refused: string[][] = [
    ['--privileged'],
    ['--network=host'],
    ['--network', 'host'],
    ['--cap-add', 'SYS_ADMIN'],
    ['-v', '/:/host'],
    ['-v/:/host'],
    ['-iv/:/host'],
    ['--volume=/:/host'],
    ['--mount', 'type=bind,src=/,dst=/h'],
    ['--security-opt=seccomp=unconfined'],
    ['--user', '0'],
    ['-u0'],
    ['-u', '0'],
    ['--read-only=false'],
    ['--memory', '8g'],
    ['--memory-swap=-1'],
    ['--pids-limit=-1'],
    ['--env', 'HOME'],
    ['-e', 'X=1'],
    ['--rm=false'],
    ['--label', 'io.code-execution-mode=0'],
    ['--tmpfs', '/x:exec'],
    ['--cpus', '64'],
    ['--cgroup-parent', '/'],
    ['--userns', 'host'],
    ['--pid=host'],
    ['--device', '/dev/kvm'],
    ['--entrypoint', 'sh'],
    ['--init=false'],
    ['--runtime', 'runc'],
    ['--gpus', 'all'],
    ['somepositional'],
    ['--ulimit'],
    ['--ulimit', 'nofile=lots'],
    ['--shm-size', '-1'],
    ['--platform', 'linux/amd64;rm'],
  ];
  for (const args of refused) {
    assert.match(errorOf({ sandbox: { extraRunArgs: args } }), /sandbox\.extraRunArgs\.\d: "/, args.join(' '));
  }
  assert.match(
    errorOf({ sandbox: { extraRunArgs: ['--ulimit', 'nofile=1:1', '--user', '0'] } }),
    /sandbox\.extraRunArgs\.2: "--user" is not accepted/,
  );
  const accepted = [
    '--ulimit',
    'nofile=1024:1024',
    '--shm-size=128m',
    '--cpu-shares',
    '512',
    '--platform',
    'linux/arm64',
    '--memory-reservation=256m',
  ];
  assert.deepEqual(parseConfig({ sandbox: { extraRunArgs: accepted } }).sandbox.extraRunArgs, accepted);
});

test('Claude Desktop mcpServers and VS Code servers shapes are both accepted', () => {
  const claude = parseConfig({ mcpServers: { memory: { command: 'npx', args: ['-y', 'x'] } } });
  assert.equal(claude.servers.memory && 'command' in claude.servers.memory && claude.servers.memory.command, 'npx');
  const vscode = parseConfig({ servers: { docs: { type: 'http', url: 'http://127.0.0.1:8931/mcp' } } });
  assert.equal(vscode.servers.docs && 'url' in vscode.servers.docs && vscode.servers.docs.url, 'http://127.0.0.1:8931/mcp');
  assert.match(errorOf({ servers: { a: { command: 'x' } }, mcpServers: {} }), /either "servers" or "mcpServers"/);
});

test('describeIssues: a line per problem under a prefix, or one line with a separator and a name for the whole', () => {
  const schema = z.object({ memory: z.string() });
  const failed = schema.safeParse({ memory: 5 });
  assert.ok(!failed.success);
  assert.match(describeIssues(failed.error, 'sandbox'), /^sandbox\.memory: /);
  const whole = schema.safeParse(7);
  assert.ok(!whole.success);
  assert.match(describeIssues(whole.error), /^\(top level\): /);
  assert.match(describeIssues(whole.error, '', { whole: 'entry', separator: '; ' }), /^entry: [^\n]*$/);
});
