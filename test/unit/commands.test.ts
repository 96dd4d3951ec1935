import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultSandboxConfig } from '../../src/config/schema.ts';
import { BOOTSTRAP, LABEL, runArgs } from '../../src/sandbox/runtime/commands.ts';

function pairs(args: string[], flag: string): string[] {
  return args.flatMap((a, i) => (a === flag ? [args[i + 1]!] : []));
}

test('run arguments carry every hardening flag and the configured limits', () => {
  const config = defaultSandboxConfig({ image: 'img:1', memory: '300m', pids: 50, cpus: 1.5, tmpSize: '32m' });
  const args = runArgs('podman', config, { name: 'n1', owner: 'h/1', session: 's' });
  assert.equal(args[0], 'run');
  for (const flag of ['--rm', '-i', '--init', '--read-only']) assert.ok(args.includes(flag), flag);
  assert.deepEqual(pairs(args, '--network'), ['none']);
  assert.deepEqual(pairs(args, '--cap-drop'), ['ALL']);
  assert.deepEqual(pairs(args, '--security-opt'), ['no-new-privileges']);
  assert.deepEqual(pairs(args, '--user'), ['65534:65534']);
  assert.deepEqual(pairs(args, '--memory'), ['300m']);
  assert.deepEqual(pairs(args, '--memory-swap'), ['300m']);
  assert.deepEqual(pairs(args, '--pids-limit'), ['50']);
  assert.deepEqual(pairs(args, '--cpus'), ['1.5']);
  assert.deepEqual(pairs(args, '--pull'), ['never']);
  assert.deepEqual(pairs(args, '--label'), [`${LABEL}=1`, `${LABEL}.owner=h/1`, `${LABEL}.session=s`]);
  assert.deepEqual(pairs(args, '--tmpfs'), ['/tmp:rw,noexec,nosuid,nodev,size=32m,mode=1777', '/work:rw,noexec,nosuid,nodev,size=32m,mode=1777']);
  const docker = runArgs('docker', config, { name: 'n1', owner: 'h/1', session: 's' });
  assert.deepEqual(pairs(docker, '--tmpfs'), [
    '/tmp:rw,noexec,nosuid,nodev,size=32m,uid=65534,gid=65534,mode=0700',
    '/work:rw,noexec,nosuid,nodev,size=32m,uid=65534,gid=65534,mode=0700',
  ]);
  assert.deepEqual(args.slice(-4), ['img:1', '-u', '-c', BOOTSTRAP]);
  for (const flag of ['-v', '--volume', '--mount', '--privileged', '--cap-add']) assert.ok(!args.includes(flag), flag);
});

test('extra run arguments come before every hardening flag, so none can override them', () => {
  const args = runArgs('docker', defaultSandboxConfig({ image: 'img:1', extraRunArgs: ['--ulimit', 'nofile=1024:1024'] }), {
    name: 'n',
    owner: 'o',
    session: 's',
  });
  assert.deepEqual(args.slice(0, 3), ['run', '--ulimit', 'nofile=1024:1024']);
});

test('podman gets no writable /run or /var/tmp and no host entries', () => {
  const podman = runArgs('podman', defaultSandboxConfig(), { name: 'n', owner: 'o', session: 's' });
  assert.ok(podman.includes('--read-only-tmpfs=false'));
  assert.ok(podman.includes('--no-hosts'));
  const docker = runArgs('docker', defaultSandboxConfig(), { name: 'n', owner: 'o', session: 's' });
  assert.ok(!docker.includes('--no-hosts'));
});
