// The kernel's own seccomp filter, installed in a Python process on this machine (no container
// needed): what it refuses, what still works, and what it says on a machine it has no filter for.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { test } from 'node:test';

const source = readFileSync(new URL('../../src/sandbox/container/kernel/seccomp.py', import.meta.url), 'utf8');
const supported = platform() === 'linux' && (arch() === 'x64' || arch() === 'arm64');

function python(code: string): string {
  return execFileSync('python3', ['-c', `${source}\n${code}`], { encoding: 'utf8' }).trim();
}

test(
  'the filter refuses user namespaces, io_uring, mounts and ptrace; threads, fork and exec still work',
  { skip: !supported && 'no filter for this machine' },
  () => {
    const out = python(
      [
        'import ctypes, errno, os, subprocess, threading',
        'status = _install_seccomp()',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'NR = {"x86_64": {"unshare": 272, "mount": 165, "ptrace": 101, "clone3": 435}, "aarch64": {"unshare": 97, "mount": 40, "ptrace": 117, "clone3": 435}}[os.uname().machine]',
        'def call(nr, *args):',
        '    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_ulong(a) if isinstance(a, int) else a for a in args])',
        '    return errno.errorcode.get(ctypes.get_errno()) if r == -1 else "allowed"',
        'params = ctypes.create_string_buffer(120)',
        'results = [status, call(425, 8, params), call(NR["unshare"], 0x10000000), call(NR["unshare"], 0x400), call(NR["mount"], 0, 0, 0, 0, 0), call(NR["ptrace"], 0, 0, 0, 0), call(NR["clone3"], 0, 0)]',
        'box = []',
        't = threading.Thread(target=box.append, args=(1,)); t.start(); t.join()',
        'pid = os.fork()',
        'if pid == 0: os._exit(7)',
        'results += [box, os.WEXITSTATUS(os.waitpid(pid, 0)[1]), subprocess.run(["true"]).returncode]',
        'print(results)',
      ].join('\n'),
    );
    assert.equal(out, "['installed', 'EPERM', 'EPERM', 'allowed', 'EPERM', 'EPERM', 'ENOSYS', [1], 7, 0]");
  },
);

test(
  'the filter refuses signals and pidfds for PID 1 and cross-process memory access, and still lets a process signal others',
  { skip: !supported && 'no filter for this machine' },
  () => {
    const out = python(
      [
        'import ctypes, errno, os, signal',
        '_install_seccomp()',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'NR = {"x86_64": {"tgkill": 234, "vm_read": 310, "vm_write": 311}, "aarch64": {"tgkill": 131, "vm_read": 270, "vm_write": 271}}[os.uname().machine]',
        'def call(nr, *args):',
        '    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_ulong(a) for a in args])',
        '    return errno.errorcode.get(ctypes.get_errno()) if r == -1 else "allowed"',
        'def kill(pid, sig):',
        '    try:',
        '        os.kill(pid, sig)',
        '        return "allowed"',
        '    except OSError as e:',
        '        return errno.errorcode[e.errno]',
        'child = os.fork()',
        'if child == 0:',
        '    signal.pause()',
        '    os._exit(0)',
        'results = [kill(1, 0), kill(1, signal.SIGTERM), call(NR["tgkill"], 1, 1, 0), call(434, 1, 0)]',
        'results += [call(NR["vm_read"], os.getpid(), 0, 0, 0, 0, 0), call(NR["vm_write"], child, 0, 0, 0, 0, 0)]',
        'fd = libc.syscall(ctypes.c_long(434), ctypes.c_ulong(child), ctypes.c_ulong(0))',
        'results += [fd >= 0, kill(child, 0), kill(child, signal.SIGKILL), os.waitpid(child, 0)[1] & 0x7f]',
        'print(results)',
      ].join('\n'),
    );
    assert.equal(out, "['EPERM', 'EPERM', 'EPERM', 'EPERM', 'EPERM', 'EPERM', True, 'allowed', 'allowed', 9]");
  },
);

test('another ABI of the machine is refused outright', { skip: !(platform() === 'linux' && arch() === 'x64') && 'x86_64 only' }, () => {
  // unshare with the x32 bit set: the same call through the x32 ABI.
  const out = python(
    [
      'import ctypes, errno',
      '_install_seccomp()',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'r = libc.syscall(ctypes.c_long(0x40000000 | 272), ctypes.c_ulong(0x400))',
      'print(errno.errorcode.get(ctypes.get_errno()) if r == -1 else "allowed")',
    ].join('\n'),
  );
  assert.equal(out, 'EPERM');
});

test('on a machine without a filter nothing is installed, and the kernel says so', () => {
  assert.equal(python('print(_install_seccomp("riscv64"), _seccomp_program("riscv64"))'), 'not installed: no filter for riscv64 None');
});
