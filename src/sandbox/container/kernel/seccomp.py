# A seccomp filter of the sandbox's own, installed by the kernel as the container's PID 1,
# before it forks (pid1.py) and before any user code, so every process in the container has it.
# It is stacked on the container runtime's default profile (filters add up; the strictest
# answer wins). Runtimes differ in what their defaults allow (user namespaces on Podman,
# io_uring on Docker), so this refuses, with EPERM, what sandboxed code never needs: new user
# namespaces (unshare/clone with CLONE_NEWUSER, setns), io_uring, mounting, kernel keyrings,
# bpf, userfaultfd, perf_event_open, ptrace, process_vm_readv/writev, and any signal to PID 1
# or pidfd of it. clone3 gets ENOSYS, so that libc falls back to clone, whose flags a classic
# BPF filter can see. Other ABIs of the machine (i386 and x32 on x86_64, arm32 on aarch64) are
# refused outright. On another architecture nothing is installed and the ready frame says so.
# The filter outlives exec, so a restarted kernel does not add it again.
import os
import struct

_CLONE_NEWUSER = 0x10000000

# name: (audit arch, x32 syscall bit or 0, numbers); numbers from the kernel's unistd tables.
_SECCOMP_ARCHES = {
    "x86_64": (0xC000003E, 0x40000000, {
        "unshare": 272, "setns": 308, "clone": 56, "clone3": 435, "mount": 165, "umount2": 166,
        "pivot_root": 155, "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321,
        "userfaultfd": 323, "perf_event_open": 298, "ptrace": 101, "seccomp": 317,
        "process_vm_readv": 310, "process_vm_writev": 311, "kill": 62, "tkill": 200, "tgkill": 234,
        "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
    }),
    "aarch64": (0xC00000B7, 0, {
        "unshare": 97, "setns": 268, "clone": 220, "clone3": 435, "mount": 40, "umount2": 39,
        "pivot_root": 41, "keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280,
        "userfaultfd": 282, "perf_event_open": 241, "ptrace": 117, "seccomp": 277,
        "process_vm_readv": 270, "process_vm_writev": 271, "kill": 129, "tkill": 130, "tgkill": 131,
        "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
    }),
}
# The same number on every architecture (the unified table from 4.x on).
_SECCOMP_COMMON = {
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
    "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442, "pidfd_open": 434,
}
_SECCOMP_REFUSED = (
    "setns", "mount", "umount2", "pivot_root", "keyctl", "add_key", "request_key", "bpf",
    "userfaultfd", "perf_event_open", "ptrace", "process_vm_readv", "process_vm_writev",
) + tuple(name for name in _SECCOMP_COMMON if name != "pidfd_open")
# Calls whose first argument is a process: refused for PID 1 (pid1.py), allowed for any other.
_SECCOMP_NOT_PID1 = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open")


def _seccomp_program(machine):
    """The filter as sock_filter tuples (code, jt, jf, k), or None for an unknown machine."""
    spec = _SECCOMP_ARCHES.get(machine)
    if spec is None:
        return None
    arch, x32_bit, numbers = spec
    numbers = dict(numbers, **_SECCOMP_COMMON)
    ld_abs, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    program = [
        (ld_abs, 0, 0, 4),  # seccomp_data.arch
        (jeq, 1, 0, arch),
        (ret, 0, 0, eperm),  # another ABI of this machine
        (ld_abs, 0, 0, 0),  # seccomp_data.nr
    ]
    if x32_bit:
        program += [(jge, 0, 1, x32_bit), (ret, 0, 0, eperm)]
    for name in _SECCOMP_REFUSED:
        program += [(jeq, 0, 1, numbers[name]), (ret, 0, 0, eperm)]
    program += [(jeq, 0, 1, numbers["clone3"]), (ret, 0, 0, enosys)]
    # Each block below loads an argument, so it ends with its own answer. The first argument's
    # low 32 bits sit at offset 16 (flags of unshare and clone; a pid_t for the others).
    for name in ("unshare", "clone"):
        program += [
            (jeq, 0, 4, numbers[name]),
            (ld_abs, 0, 0, 16),
            (jset, 0, 1, _CLONE_NEWUSER),
            (ret, 0, 0, eperm),
            (ret, 0, 0, allow),
        ]
    for name in _SECCOMP_NOT_PID1:
        program += [
            (jeq, 0, 4, numbers[name]),
            (ld_abs, 0, 0, 16),
            (jeq, 0, 1, 1),
            (ret, 0, 0, eperm),
            (ret, 0, 0, allow),
        ]
    program.append((ret, 0, 0, allow))
    return program


def _install_seccomp(machine=None):
    """Installs the filter on every thread of this process; returns what happened, in words."""
    machine = machine or os.uname().machine
    program = _seccomp_program(machine)
    if program is None:
        return "not installed: no filter for %s" % machine
    try:
        import ctypes  # here, not above: a restarted kernel never needs it

        class _SockFprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        libc = ctypes.CDLL(None, use_errno=True)
        code = b"".join(struct.pack("=HBBI", c, jt, jf, k) for c, jt, jf, k in program)
        buffer = ctypes.create_string_buffer(code, len(code))
        fprog = _SockFprog(len(program), ctypes.cast(buffer, ctypes.c_void_p))
        ulong = ctypes.c_ulong
        # PR_SET_NO_NEW_PRIVS: already set by the runtime; a filter requires it.
        if libc.prctl(ctypes.c_int(38), ulong(1), ulong(0), ulong(0), ulong(0)) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        # seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog): all threads at once.
        number = _SECCOMP_ARCHES[machine][2]["seccomp"]
        if libc.syscall(ctypes.c_long(number), ulong(1), ulong(1), ctypes.byref(fprog)) != 0:
            error = ctypes.get_errno()
            # PR_SET_SECCOMP, SECCOMP_MODE_FILTER: this thread and the ones it starts.
            if libc.prctl(ctypes.c_int(22), ulong(2), ctypes.byref(fprog), ulong(0), ulong(0)) != 0:
                error = ctypes.get_errno() or error
                raise OSError(error, os.strerror(error))
        return "installed"
    except Exception as exc:  # ctypes missing, a kernel without seccomp: run, but say so
        return "not installed: %s" % exc
