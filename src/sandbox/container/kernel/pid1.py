# The container's PID 1, out of reach of sandboxed code. The runtime starts the kernel as PID 1
# (no init binary): after its seccomp filter is installed, and before any user code arrives, it
# forks. The parent stays PID 1 as a reaper: it carries the same filter, is made non-dumpable
# (so /proc/1/mem, /proc/1/syscall and ptrace need CAP_SYS_PTRACE, which the sandbox never has),
# keeps no protocol descriptors, runs no Python after the fork but its wait loop, and, as the
# init of its PID namespace, gets no signal from inside the container (it handles none; the
# filter refuses them besides). An init binary of the runtime's (catatonit, tini) would run
# with the runtime's filter only, and as the sandbox's own uid, it could be rewritten through
# /proc/1/mem to run anything the filter refuses.


def _stand_as_init():
    """Forks when this process is the container's PID 1: returns in the child (the kernel) with
    what was done, in words; the parent reaps until the kernel ends, then exits as it did."""
    import os
    import signal

    if os.getpid() != 1:
        return "not PID 1: the container's init is another process"
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        # PR_SET_DUMPABLE 0, inherited by the fork and reset to 1 in the child below.
        if libc.prctl(ctypes.c_int(4), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    except Exception as exc:  # no ctypes: run, but say so
        return "PID 1 is the kernel itself (not made undumpable: %s)" % exc
    child = os.fork()
    if child == 0:
        # The kernel's own /proc entries stay its user's (a non-dumpable process's are root's).
        libc.prctl(ctypes.c_int(4), ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
        return "a reaper of the kernel's own, undumpable"
    # Python's SIGINT handler would make PID 1 signalable; the default leaves it ignored.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.closerange(0, 2)
    os.closerange(3, 65536)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(0)
        except InterruptedError:
            continue
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)
