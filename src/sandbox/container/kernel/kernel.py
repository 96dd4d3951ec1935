# Code Execution Mode sandbox kernel. Runs inside the container as the only process of
# interest, fed over stdin by the host: frames are a 4-byte big-endian length and UTF-8 JSON.
# Python 3.9+ and the standard library only. The last file of the kernel's source: the host
# prepends the others (source.ts lists them, in order), whose names this file uses; it holds
# what needs the process's descriptors, threads and signals (the wire, the run, the loop).
#
# The protocol uses private duplicates of the original stdin/stdout. File descriptor 0 is then
# /dev/null and file descriptor 1 a pipe read back as the run's stdout, so neither user code's
# prints nor subprocesses can read or write protocol bytes by accident. Code running in this
# process could still forge frames on purpose; the host validates every frame and grants nothing
# a frame asks for beyond what the run is allowed anyway.
#
# Threads: the main thread runs user code; a reader thread takes frames from the host; frames
# are written whole, by the thread that sends one when nothing is queued, else by a writer
# thread from a bounded queue. The host's interrupt becomes a
# SIGINT to the main thread (Python runs signal handlers there only), and the handler raises
# KeyboardInterrupt only while user code runs, never half-way through the kernel's own lines.
# A `restart` frame makes the reader thread end every other process and exec a fresh
# interpreter in place, on the same protocol descriptors: that is how `reset` and code that
# ignores interrupts cost milliseconds instead of a container.
import base64
import builtins
import codecs
import collections
import functools
import io
import itertools
import json
import linecache
import os
import select
import signal
import struct
import sys
import threading
import time
import types
import warnings

_HEADER = struct.Struct(">I")
_MAX_METHOD_CHARS = 64
# The host's cap on a request frame (kernel-container.ts KERNEL_FRAME_LIMITS.req): a bigger call
# raises here, in the code, instead of ending the session.
_MAX_REQUEST_BYTES = 10 * 1024 * 1024
# Output waiting for the host beyond this blocks the writing thread (back-pressure).
_OUTBOX_BYTES = 2 * 1024 * 1024
# How the exec'd kernel finds its source: the argument after -c's.
_RESTART_BOOTSTRAP = "import sys;exec(compile(sys.argv.pop(1),'<kernel>','exec'))"

# ---- start: protocol descriptors, a restart's hand-over, the seccomp filter ----

_boot = json.loads(sys.argv.pop(1)) if len(sys.argv) > 1 else None
if _boot is None:
    _seccomp_status = _install_seccomp()[:160]
    _init_status = _stand_as_init()[:160]
    _in_fd = os.dup(0)
    _out_fd = os.dup(1)
else:
    _in_fd = int(_boot["in"])
    _out_fd = int(_boot["out"])
    os.set_inheritable(_in_fd, False)
    os.set_inheritable(_out_fd, False)
    _seccomp_status = str(_boot["seccomp"])
    _init_status = str(_boot.get("init", ""))
    # What the previous interpreter left: ignored signals and a signal mask survive exec,
    # and its killed children are ours to reap.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    for _signal in signal.valid_signals():
        if _signal not in (signal.SIGKILL, signal.SIGSTOP, signal.SIGPIPE, signal.SIGXFSZ):
            try:
                if signal.getsignal(_signal) == signal.SIG_IGN:
                    signal.signal(_signal, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass
os.set_blocking(_out_fd, False)  # see _Outbox.put
_ENVIRON = dict(os.environ)
_CWD = os.getcwd()
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
_fd1_read, _fd1_write = os.pipe()
os.dup2(_fd1_write, 1)
os.close(_fd1_write)
os.set_blocking(_fd1_read, False)

_MAIN = threading.get_ident()


class _State:
    run = None  # id of the run in progress, or None
    last_run = "none"
    interrupted = False  # the host asked to interrupt the run in progress


_state = _State()
_state_lock = threading.Lock()

# ---- interrupts: only user code is ever interrupted ----

_user = [False]  # user code of a run is on the main thread
_guard = [0]  # > 0 while the main thread is in kernel code called from user code
_deferred = [False]  # an interrupt arrived inside such kernel code


class _Caught:
    """Rides on the KeyboardInterrupt of the host's interrupt. Freed while its run goes on, it
    means the code caught the interrupt and went on: the host is told, so that it need not
    wait out the whole grace for code that will not stop."""

    def __init__(self, run):
        self.run = run

    def __del__(self):
        if self.run is None or _state.run != self.run or not _state.interrupted:
            return
        # A collection may run this anywhere, inside the outbox too: never wait for its lock.
        if _outbox._ready.acquire(blocking=False):
            _outbox._ready.release()
            _outbox.put(_encode({"t": "ignored", "run": self.run}), interruptible=False)


def _interruption():
    exc = KeyboardInterrupt()
    if _state.interrupted:
        exc._cem_caught = _Caught(_state.run)
    return exc


def _on_sigint(signum, frame):
    if not _user[0]:
        return
    if _guard[0]:
        _deferred[0] = True
        return
    raise _interruption()


def _guarded(function):
    """Kernel code user code calls on the main thread (print, requests): an interrupt that
    arrives meanwhile is raised when it returns, not inside it."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if threading.get_ident() != _MAIN:
            return function(*args, **kwargs)
        _guard[0] += 1
        try:
            return function(*args, **kwargs)
        finally:
            _guard[0] -= 1
            if not _guard[0] and _deferred[0]:
                _deferred[0] = False
                if _user[0]:
                    raise _interruption()

    return wrapper


def _interrupt_waiting():
    """True on the main thread when an interrupt waits for kernel code to return."""
    return threading.get_ident() == _MAIN and _deferred[0]


# ---- frames to the host: one writer thread, whole frames ----


def _encode(message):
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # A lone surrogate (print("\ud800")) becomes "?" rather than bytes that are not UTF-8.
    data = body.encode("utf-8", "replace")
    return _HEADER.pack(len(data)) + data


class _Outbox:
    """Frames to the host, written in order and whole: at once when the pipe takes them, else by
    the writer thread from a bounded queue."""

    def __init__(self, limit):
        self._frames = collections.deque()
        self._bytes = 0
        self._limit = limit
        self._ready = threading.Condition(threading.Lock())
        self.wire = threading.Lock()  # held while a frame is being written
        self._corked = None  # small frames held back by cork(), in order

    def cork(self):
        """Holds small frames back until a put with uncork: a run's last output then reaches the
        host together with its `done`, in one write (each write wakes the host)."""
        with self._ready:
            self._corked = []

    def put(self, frame, interruptible=True, uncork=False):
        """Queues a frame; waits while too much is queued. False if an interrupt cut the wait.
        With nothing queued or on the wire, the calling thread writes the frame itself: waking
        the writer thread costs a run more than the write (the threads take turns at the GIL).
        The descriptor does not block and the frame is at most PIPE_BUF, so that write is one
        system call that no signal splits; a frame the pipe has no room for goes to the writer
        thread, ahead of anything queued later."""
        with self._ready:
            if self._corked is not None:
                held = sum(len(f) for f in self._corked)
                if not uncork and held + len(frame) <= select.PIPE_BUF:
                    self._corked.append(frame)
                    return True
                frame = b"".join(self._corked + [frame])
                self._corked = None
            if not self._bytes and len(frame) <= select.PIPE_BUF and not self.wire.locked():
                with self.wire:
                    try:
                        written = os.write(_out_fd, frame)
                    except BlockingIOError:
                        written = 0
                    except OSError:
                        os._exit(0)  # the host is gone
                if written == len(frame):
                    return True
                frame = frame[written:]
                self._frames.append(frame)
                self._bytes += len(frame)
                self._ready.notify_all()
                return True
            while self._bytes and self._bytes + len(frame) > self._limit:
                if interruptible and _interrupt_waiting():
                    return False
                self._ready.wait(0.05)
            self._frames.append(frame)
            self._bytes += len(frame)
            self._ready.notify_all()
        return True

    def run(self):
        # No signal ever interrupts this thread's writes half-way.
        signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
        while True:
            with self._ready:
                while not self._frames:
                    self._ready.wait()
                frame = self._frames.popleft()
            with self.wire:
                view = memoryview(frame)
                try:
                    while view:
                        try:
                            view = view[os.write(_out_fd, view):]
                        except BlockingIOError:
                            select.select([], [_out_fd], [])
                except OSError:
                    os._exit(0)  # the host is gone
            with self._ready:
                self._bytes -= len(frame)
                self._ready.notify_all()


_outbox = _Outbox(_OUTBOX_BYTES)


@_guarded
def _send(message):
    return _outbox.put(_encode(message))


# ---- the run's stdout and stderr ----


class _RunStream(_StreamWriter):
    """A stream writer (streams.py) whose text goes out as `out` frames tagged with the run; a
    flush is kernel code user code calls, so an interrupt waits for it."""

    flush = _guarded(_StreamWriter.flush)


def _send_out(stream, data):
    return _send({"t": "out", "run": _state.run or _state.last_run, "stream": stream, "data": data})


_stdout = _RunStream("stdout", _send_out)
_stderr = _RunStream("stderr", _send_out)
sys.stdout = _stdout
sys.stderr = _stderr
sys.stdin = io.StringIO("")


def _after_fork_in_child():
    # A forked child (os.fork, multiprocessing) has no writer thread and no business with the
    # protocol: it loses the descriptors, and its prints go to fd 1 and 2, which come back as
    # the run's stdout and stderr.
    for fd in (_in_fd, _out_fd):
        try:
            os.close(fd)
        except OSError:
            pass
    for name, fd in (("stdout", 1), ("stderr", 2)):
        stream = io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding="utf-8", errors="replace", line_buffering=True)
        setattr(sys, name, stream)


os.register_at_fork(after_in_child=_after_fork_in_child)

_fd1_lock = threading.Lock()
_fd1_decoder = codecs.getincrementaldecoder("utf-8")("replace")


def _drain_fd1():
    """Moves whatever subprocesses or os.write(1, ...) put on fd 1 into the run's stdout."""
    with _fd1_lock:
        chunks = []
        while True:
            try:
                data = os.read(_fd1_read, 65536)
            except BlockingIOError:
                break
            if not data:
                break
            chunks.append(data)
        text = _fd1_decoder.decode(b"".join(chunks)) if chunks else ""
        if text:
            _stdout.write(text)


def _fd1_reader():
    while True:
        select.select([_fd1_read], [], [])
        _drain_fd1()


# ---- requests to the host (tool calls and the like), from any thread and any event loop ----

_pending = {}  # request id -> asyncio future (of whichever loop awaits it)
_sync_waiters = {}  # request id -> [threading.Event, reply]
_ids = itertools.count(1)


class HostError(Exception):
    """The host refused or failed a request; `kind` says why (the host's one taxonomy, used as it
    is), `type` names the host-side error."""

    def __init__(self, type_, message, details=None, kind="failed"):
        super().__init__(message)
        self.type = type_
        self.kind = kind
        # What the host error carries besides its message (a JSON-RPC error's code and data).
        self.details = details if isinstance(details, dict) else {}


def _settle(future, message):
    if future.done():
        return
    try:
        future.set_result(_reply_value(message))
    except HostError as error:
        future.set_exception(error)


def _reply_value(message):
    if message.get("ok"):
        return message.get("result")
    error = message.get("error") or {}
    raise HostError(str(error.get("type", "HostError")), str(error.get("message", "")), error.get("details"), str(error.get("kind", "failed")))


def _request_frame(request_id, method, params):
    if not isinstance(method, str) or not 0 < len(method) <= _MAX_METHOD_CHARS:
        raise ValueError("method must be a string of 1 to %d characters" % _MAX_METHOD_CHARS)
    frame = _encode({"t": "req", "id": request_id, "run": _state.run or _state.last_run, "method": method, "params": params})
    if len(frame) > _MAX_REQUEST_BYTES:
        raise ValueError("the request is %d bytes; the limit is %d" % (len(frame), _MAX_REQUEST_BYTES))
    return frame


@_guarded
def _send_request(frame):
    if not _outbox.put(frame):
        raise KeyboardInterrupt


def request_sync(method, params=None):
    """Like request(), for code that cannot await (attribute look-ups, help()); any thread."""
    request_id = next(_ids)
    frame = _request_frame(request_id, method, params)
    slot = [threading.Event(), None]
    _sync_waiters[request_id] = slot
    try:
        _send_request(frame)
        slot[0].wait()
    finally:
        _sync_waiters.pop(request_id, None)
    return _reply_value(slot[1])


async def request(method, params=None):
    """Ask the host to do `method` with JSON-serialisable `params`; returns its JSON result.
    Works on any event loop, in any thread."""
    import asyncio  # already loaded: something runs this coroutine

    request_id = next(_ids)
    frame = _request_frame(request_id, method, params)
    future = asyncio.get_running_loop().create_future()
    _pending[request_id] = future
    try:
        _send_request(frame)
        return await future
    finally:
        _pending.pop(request_id, None)


def _deliver(message):
    """A reply from the host, on the reader thread: wakes its waiter on the waiter's own loop."""
    request_id = message.get("id")
    slot = _sync_waiters.get(request_id)
    if slot is not None:
        slot[1] = message
        slot[0].set()
        return
    future = _pending.pop(request_id, None)
    if future is None:
        return
    try:
        future.get_loop().call_soon_threadsafe(_settle, future, message)
    except RuntimeError:
        pass  # that loop is closed: nobody waits any more


_IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml")
_MAX_IMAGE_BYTES = 8 * 1024 * 1024  # the host's limit too; a bigger frame would end the session


def emit_image(data, mime="image/png"):
    """Send image bytes (PNG by default) back with the run's result."""
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise TypeError("emit_image() takes bytes, not %s" % type(data).__name__)
    if mime not in _IMAGE_MIMES:
        raise ValueError("emit_image(): mime must be one of %s, not %r" % (", ".join(_IMAGE_MIMES), mime))
    if len(data) > _MAX_IMAGE_BYTES:
        raise ValueError("emit_image(): the image is %d bytes; the limit is %d" % (len(data), _MAX_IMAGE_BYTES))
    _stdout.flush()
    _send({"t": "image", "run": _state.run or _state.last_run, "mime": mime, "data": base64.b64encode(data).decode("ascii")})


# ---- plots (plots.py): matplotlib figures come back as PNG images ----

_install_plots()


_host_module = types.ModuleType("sandbox_host")
_host_module.request = request
_host_module.request_sync = request_sync
_host_module.emit_image = emit_image
_host_module.emit_figures = emit_figures
_host_module.HostError = HostError
_host_module.add_error_hint = _add_error_hint
_host_module.hide_frames = _hide_frames
_host_module.module_hint = _module_hint_text
_host_module.workspace_error = workspace_error
_host_module.workspace_snapshot = workspace_snapshot
sys.modules["sandbox_host"] = _host_module


# ---- executing code ----

_namespace = {"__name__": "__main__", "__builtins__": builtins, "emit_image": emit_image}
_run_count = [0]
warnings.showwarning = _unawaited_warning(warnings.showwarning)


_loop_box = []


def _kernel_loop():
    """The event loop top-level await runs on, kept from run to run. Made on first use:
    importing asyncio costs a fresh interpreter tens of milliseconds."""
    if not _loop_box or _loop_box[0].is_closed():
        import asyncio

        loop = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            try:
                loop = asyncio.get_event_loop()  # one the code made current already
            except RuntimeError:
                pass
        if loop is None or loop.is_closed():
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
        _loop_box[:] = [loop]
    return _loop_box[0]


def _evaluate(code_object):
    result = eval(code_object, _namespace)
    if code_object.co_flags & 0x80:  # CO_COROUTINE: the code used top-level await
        result = _kernel_loop().run_until_complete(result)
    return result


def _cancel_leftover_tasks():
    if not _loop_box:
        return
    import asyncio

    loop = _loop_box[0]
    if loop.is_closed():
        return
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        try:
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        except BaseException:
            pass


def _figures_after_error(interrupted):
    """Figures a failed run left open: shown (what it drew before failing helps), or only
    closed after an interrupt, so that none turns up with a later run."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None or sys.modules["matplotlib"].get_backend() != _PLOTS_BACKEND:
        return
    _user[0] = not interrupted
    try:
        if not interrupted:
            emit_figures(strict=False)
    except BaseException:
        pass
    finally:
        _user[0] = False
        try:
            plt.close("all")
        except BaseException:
            pass


def _run_code(code):
    """Compiles and runs one run's code: (status, value repr or None, error or None)."""
    _run_count[0] += 1
    filename = "<run-%d>" % _run_count[0]
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        _user[0] = True
        if _state.interrupted:
            raise KeyboardInterrupt
        try:
            body, expr = _compile(code, filename)
        except SyntaxError as exc:
            _user[0] = False
            return "error", None, _error_of(exc)
        _evaluate(body)
        value = _evaluate(expr) if expr is not None else None
        emit_figures(strict=False)
        if value is None:
            return "ok", None, None
        _namespace["_"] = value
        text = _value_text(value)
    except KeyboardInterrupt as exc:
        _user[0] = False
        if hasattr(exc, "_cem_caught"):
            exc._cem_caught.run = None  # it reached the kernel: not caught by the code
        _cancel_leftover_tasks()
        _figures_after_error(interrupted=True)
        return ("interrupted" if _state.interrupted else "error"), None, _error_of(exc)
    except BaseException as exc:  # SystemExit too: user code must not end the kernel
        _user[0] = False
        error = _error_of(exc)
        _figures_after_error(interrupted=False)
        return "error", None, error
    finally:
        _user[0] = False
    return "ok", text, None


# ---- after a run: nothing of it keeps running ----

_kernel_threads = set()


def _in_own_pid_namespace():
    # The kernel is the container's init or its direct child: every other process in sight
    # is the sandbox's own. Anywhere else (a kernel run by hand) nothing is killed.
    return os.getpid() == 1 or os.getppid() == 1


def _process_state(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
        return stat[stat.rindex(b")") + 2:stat.rindex(b")") + 3].decode()
    except (OSError, ValueError):
        return None  # gone


def _sweep():
    """SIGKILLs every process in the container but init and this one; returns their names."""
    if not _in_own_pid_namespace():
        return []
    me = os.getpid()
    killed = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me):
            continue
        pid = int(name)
        if _process_state(pid) in (None, "Z"):
            continue
        try:
            with open("/proc/%d/comm" % pid) as f:
                command = f.read().strip()
        except OSError:
            command = "?"
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append((pid, command))
        except OSError:
            pass
    # Reap our own children; init reaps the rest. Bounded: a process stuck in the kernel
    # (uninterruptible sleep) must not stop the run from reporting.
    deadline = time.monotonic() + 1.0
    for pid, _ in killed:
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    break
            except ChildProcessError:
                if _process_state(pid) is None:
                    break
            time.sleep(0.002)
    return [command for _, command in killed]


def _leftover_threads():
    """User threads still alive shortly after an interrupted run."""
    deadline = time.monotonic() + 0.2
    main = threading.main_thread()

    def user_threads():
        return [t for t in threading.enumerate() if t is not main and t.ident not in _kernel_threads and t.is_alive()]

    for thread in user_threads():
        try:
            thread.join(max(0.0, deadline - time.monotonic()))
        except BaseException:
            pass
    return len(user_threads())


def _after_run():
    """Clean-up between the user code and the `done` frame; extra fields for that frame."""
    extra = {}
    signal.signal(signal.SIGINT, _on_sigint)  # in case the code replaced it
    stopped = _sweep()
    if stopped:
        names = ", ".join(sorted(set(stopped))[:5])
        _stderr.write("[sandbox] stopped %d process%s the code left running (%s)\n" % (len(stopped), "" if len(stopped) == 1 else "es", names))
    if _state.interrupted:
        threads = _leftover_threads()
        if threads:
            extra["leftoverThreads"] = threads
    _outbox.cork()
    _drain_fd1()
    _stdout.flush()
    _stderr.flush()
    try:
        _collect_out(_state.run)
    except Exception as e:  # never lose the run's result over its files
        _stderr.write("[sandbox] files in /work/out not returned: %s\n" % e)
        _stderr.flush()
    return extra


def _execute(message):
    run = str(message.get("run"))
    # Echoed in `done`, so the host can tell it from one the code forged with _send (a best
    # effort: the code shares this process and could dig the token out of it).
    token = message.get("token")
    with _state_lock:
        _state.run = run
        _state.last_run = run
        _state.interrupted = False
    _deferred[0] = False
    try:
        outcome = _run_code(str(message.get("code", "")))
    except KeyboardInterrupt:
        # Raised on one of the kernel's own lines next to the user code (it is not caught
        # there): the run still reports.
        _user[0] = False
        outcome = ("interrupted" if _state.interrupted else "error"), None, {"type": "KeyboardInterrupt", "message": "", "traceback": "KeyboardInterrupt\n"}
    status, value, error = outcome
    if status != "ok":
        _forget_after_failed_run()
    done = {"t": "done", "run": run, "token": token, "status": status, "value": value, "error": error}
    try:
        done.update(_after_run())
    finally:
        with _state_lock:
            _state.run = None
        _outbox.put(_encode(done), interruptible=False, uncork=True)


# ---- the reader thread: frames from the host ----

_inbox = collections.deque()
_inbox_wake = threading.Lock()  # released by the reader when it queues a message
_inbox_wake.acquire()


def _read_exact(n):
    parts = []
    while n > 0:
        chunk = os.read(_in_fd, n)
        if not chunk:
            return None
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def _interrupt(run):
    with _state_lock:
        if _state.run is not None and _state.run == run:
            _state.interrupted = True
            signal.pthread_kill(_MAIN, signal.SIGINT)
            if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
                _outbox.put(_encode({"t": "ignored", "run": run}), interruptible=False)


def _restart(source):
    """Ends every other process and replaces this interpreter with a fresh kernel, keeping the
    container and the protocol descriptors. Runs on the reader thread: the main thread may be
    stuck in code that ignores interrupts."""
    _sweep()
    argv = [sys.executable or "/usr/bin/python3", "-u", "-c", _RESTART_BOOTSTRAP, source,
            json.dumps({"in": _in_fd, "out": _out_fd, "seccomp": _seccomp_status, "init": _init_status})]
    try:
        os.chdir(_CWD)
    except OSError:
        pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    # The writer finishes the frame on the wire; queued frames of the old run are dropped.
    _outbox.wire.acquire(timeout=2.0)
    try:
        os.set_inheritable(_in_fd, True)
        os.set_inheritable(_out_fd, True)
        os.execve(argv[0], argv, _ENVIRON)
    except OSError as exc:
        # The host sees no `ready` and kills the container.
        os.write(2, ("sandbox kernel: restart failed: %s\n" % exc).encode())
        os.set_inheritable(_in_fd, False)
        os.set_inheritable(_out_fd, False)
        _outbox.wire.release()


def _reader():
    while True:
        header = _read_exact(_HEADER.size)
        if header is None:
            break
        body = _read_exact(_HEADER.unpack(header)[0])
        if body is None:
            break
        message = json.loads(body.decode("utf-8"))
        kind = message.get("t")
        if kind == "exec":
            _inbox.append(message)
            try:
                _inbox_wake.release()
            except RuntimeError:
                pass  # already awake
        elif kind == "interrupt":
            _interrupt(message.get("run"))
        elif kind == "res":
            _deliver(message)
        elif kind == "restart":
            _restart(str(message.get("source", "")))
        elif kind == "ws":
            _workspace_frame(message)
    # stdin closed: the host is gone or done with us. Stop at once, even mid-run, so that
    # nothing keeps running after the bridge exits.
    os._exit(0)


def _start_thread(target, name):
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    _kernel_threads.add(thread.ident)


def _main():
    if _boot is not None:
        _sweep()  # anything the old interpreter's threads started while it was being replaced
    signal.signal(signal.SIGINT, _on_sigint)
    _start_thread(_outbox.run, "sandbox-writer")
    _start_thread(_reader, "sandbox-reader")
    _start_thread(_fd1_reader, "sandbox-fd1")
    _start_egress(_start_thread)  # egress.py: only when the host mounted the proxy's socket
    _make_out_dir()
    ready = {"t": "ready", "python": "%d.%d.%d" % sys.version_info[:3], "pid": os.getpid(), "seccomp": _seccomp_status, "init": _init_status}
    if _boot is None:
        # A fresh container only: after a restart, code could have planted entries in /work.
        try:
            ready["dists"], ready["distsMore"] = _image_distributions()
        except Exception:
            pass  # the listing then says what it said before
    _send(ready)
    while True:
        try:
            while not _inbox:
                _inbox_wake.acquire()
            _execute(_inbox.popleft())
        except BaseException:
            # A signal handler the code installed raised on the kernel's own lines. If that
            # cost a run its `done`, the host's timeout and restart take over.
            continue


_main()
