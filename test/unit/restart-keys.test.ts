// Which configuration changes the running bridge applies itself and which need a new bridge
// (the VS Code extension restarts its bridge only for those).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseConfig } from '../../src/config/load.ts';
import { restartKey, restartReasons } from '../../src/config/restart-keys.ts';

const base = {
  stateDir: '/tmp/cem-state',
  servers: { one: { command: 'node', args: ['one.js'] } },
  consent: { decisionsFile: '/tmp/d.json', requestsFile: '/tmp/r.json', servers: {} },
};

function changed(change: Record<string, unknown>): string[] {
  const before = parseConfig(base);
  const after = parseConfig({ ...base, ...change });
  assert.equal(restartKey(before) === restartKey(after), restartReasons(before, after).length === 0, 'the key and the reasons agree');
  return restartReasons(before, after);
}

test('servers, proxy settings, consent of workspace servers, result sizes and the network need no restart', () => {
  assert.deepEqual(changed({ servers: { ...base.servers, two: { url: 'http://127.0.0.1:9/mcp' } } }), []);
  assert.deepEqual(changed({ servers: {} }), []);
  assert.deepEqual(changed({ proxy: { callTimeoutSeconds: 5, maxResultBytes: 1024 * 1024, discoveryWaitSeconds: 1 } }), []);
  assert.deepEqual(changed({ consent: { ...base.consent, servers: { one: 'ab'.repeat(8) } } }), []);
  assert.deepEqual(changed({ sandbox: { resultChars: 5000, maxOutputChars: 10_000 } }), []);
  // The sandbox's network: the proxy reads it at each request, so sessions keep their state.
  assert.deepEqual(changed({ sandbox: { network: { allow: ['api.example.com:443'], ask: true, maxRequestsPerRun: 10 } } }), []);
});

test('the sandbox, the state dir, the run log and the consent files need a new bridge, and are named', () => {
  assert.deepEqual(changed({ sandbox: { memory: '1g' } }), ['sandbox.memory']);
  assert.deepEqual(changed({ sandbox: { image: 'python:3.13-slim', cpus: 2, resultChars: 5000 } }), ['sandbox.cpus', 'sandbox.image']);
  assert.deepEqual(changed({ sandbox: { backend: 'wasm' } }), ['sandbox.backend']);
  assert.deepEqual(changed({ sandbox: { workspace: { path: '/tmp', access: 'read-only' } } }), ['sandbox.workspace']);
  assert.deepEqual(changed({ stateDir: '/tmp/elsewhere' }), ['stateDir']);
  assert.deepEqual(changed({ runLog: { keepFiles: 2 } }), ['runLog.keepFiles']);
  assert.deepEqual(changed({ consent: { ...base.consent, decisionsFile: '/tmp/other.json' } }), ['consent.decisionsFile']);
  assert.deepEqual(changed({ roots: ['/tmp'] }), ['roots']);
});
