# Code Execution Mode sandbox kernel. Runs inside the container as the only process of
# interest, fed over stdin by the host: frames are a 4-byte big-endian length and UTF-8 JSON.
# Python 3.9+ and the standard library only.
#
# The protocol uses private duplicates of the original stdin/stdout. File descriptor 0 is then
# /dev/null and file descriptor 1 a pipe read back as the run's stdout, so neither user code's
# prints nor subprocesses can read or write protocol bytes by accident. Code running in this process could still forge
# frames on purpose; the host validates every frame and grants nothing a frame asks for beyond
# what the run is allowed anyway.
import ast
import asyncio
import base64
import builtins
import codecs
import io
import itertools
import json
import linecache
import os
import platform
import queue
import select
import signal
import struct
import sys
import threading
import time
import traceback
import types

_HEADER = struct.Struct(">I")
_CHUNK_CHARS = 64 * 1024
_FLUSH_SECONDS = 0.1
_MAX_VALUE_CHARS = 1024 * 1024
_MAX_TRACEBACK_FRAMES = 30

_proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
_proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
_fd1_read, _fd1_write = os.pipe()
os.dup2(_fd1_write, 1)
os.close(_fd1_write)
os.set_blocking(_fd1_read, False)

_send_lock = threading.Lock()


def _send(message):
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    with _send_lock:
        _proto_out.write(_HEADER.pack(len(body)) + body)


def _read_exact(n):
    parts = []
    while n > 0:
        chunk = _proto_in.read(n)
        if not chunk:
            return None
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


class _State:
    run = None  # id of the run in progress, or None
    last_run = "none"
    interrupted = False  # the host asked to interrupt the run in progress


_state = _State()
_state_lock = threading.Lock()
_main_thread = threading.main_thread().ident


class _StreamWriter(io.TextIOBase):
    """sys.stdout / sys.stderr: buffers text and sends it as frames tagged with the run."""

    def __init__(self, name):
        super().__init__()
        self._name = name
        self._parts = []
        self._size = 0
        self._last_flush = time.monotonic()
        self._lock = threading.RLock()

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "replace"

    def writable(self):
        return True

    def isatty(self):
        return False

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        if not text:
            return 0
        with self._lock:
            self._parts.append(text)
            self._size += len(text)
            if self._size >= _CHUNK_CHARS or time.monotonic() - self._last_flush >= _FLUSH_SECONDS:
                self.flush()
        return len(text)

    def flush(self):
        with self._lock:
            if not self._parts:
                return
            data = "".join(self._parts)
            self._parts = []
            self._size = 0
            self._last_flush = time.monotonic()
            run = _state.run or _state.last_run
            for start in range(0, len(data), _CHUNK_CHARS):
                _send({"t": "out", "run": run, "stream": self._name, "data": data[start:start + _CHUNK_CHARS]})


_stdout = _StreamWriter("stdout")
_stderr = _StreamWriter("stderr")
sys.stdout = _stdout
sys.stderr = _stderr
sys.stdin = io.StringIO("")

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


# ---- requests to the host (tool calls and the like), many in flight at once ----

_loop = asyncio.new_event_loop()
asyncio.set_event_loop(_loop)
_pending = {}
_sync_waiters = {}
_ids = itertools.count(1)


class HostError(Exception):
    """The host refused or failed a request; `type` names the host-side error."""

    def __init__(self, type_, message):
        super().__init__(message)
        self.type = type_


def _settle(request_id, message):
    future = _pending.pop(request_id, None)
    if future is None or future.done():
        return
    try:
        future.set_result(_reply_value(message))
    except HostError as error:
        future.set_exception(error)


def _reply_value(message):
    if message.get("ok"):
        return message.get("result")
    error = message.get("error") or {}
    raise HostError(str(error.get("type", "HostError")), str(error.get("message", "")))


def request_sync(method, params=None):
    """Like request(), for code that cannot await (attribute look-ups, help())."""
    request_id = next(_ids)
    slot = [threading.Event(), None]
    _sync_waiters[request_id] = slot
    try:
        _send({"t": "req", "id": request_id, "run": _state.run or _state.last_run, "method": method, "params": params})
        slot[0].wait()
    finally:
        _sync_waiters.pop(request_id, None)
    return _reply_value(slot[1])


async def request(method, params=None):
    """Ask the host to do `method` with JSON-serialisable `params`; returns its JSON result."""
    request_id = next(_ids)
    future = asyncio.get_running_loop().create_future()
    _pending[request_id] = future
    try:
        _send({"t": "req", "id": request_id, "run": _state.run or _state.last_run, "method": method, "params": params})
        return await future
    finally:
        _pending.pop(request_id, None)


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


_host_module = types.ModuleType("sandbox_host")
_host_module.request = request
_host_module.request_sync = request_sync
_host_module.emit_image = emit_image
_host_module.HostError = HostError
sys.modules["sandbox_host"] = _host_module


# ---- executing code ----

_namespace = {"__name__": "__main__", "__builtins__": builtins, "emit_image": emit_image}
_run_count = [0]


def _trimmed_traceback(exc):
    tb = exc.__traceback__
    # Drop the kernel's own frames so the agent sees only its code and what it called.
    while tb is not None and tb.tb_frame.f_code.co_filename == "<kernel>":
        tb = tb.tb_next
    lines = traceback.format_exception(type(exc), exc, tb, limit=-_MAX_TRACEBACK_FRAMES)
    return "".join(lines)


def _error_of(exc):
    message = str(exc)
    if len(message) > 60000:
        message = message[:60000] + "..."
    text = _trimmed_traceback(exc)
    if len(text) > 200000:
        text = text[:100000] + "\n...\n" + text[-100000:]
    return {"type": type(exc).__name__, "message": message, "traceback": text}


def _compile(code, filename):
    tree = ast.parse(code, filename, "exec")
    flags = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
    tail = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        tail = ast.Expression(tree.body.pop().value)
    body = compile(tree, filename, "exec", flags=flags)
    expr = compile(tail, filename, "eval", flags=flags) if tail is not None else None
    return body, expr


def _evaluate(code_object):
    result = eval(code_object, _namespace)
    if code_object.co_flags & 0x80:  # CO_COROUTINE: the code used top-level await
        result = _loop.run_until_complete(result)
    return result


def _cancel_leftover_tasks():
    tasks = [t for t in asyncio.all_tasks(_loop) if not t.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        try:
            _loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        except BaseException:
            pass


def _run_code(code):
    _run_count[0] += 1
    filename = "<run-%d>" % _run_count[0]
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        body, expr = _compile(code, filename)
    except SyntaxError as exc:
        detail = "".join(traceback.format_exception_only(type(exc), exc))
        return "error", None, {"type": type(exc).__name__, "message": str(exc), "traceback": detail}
    try:
        _evaluate(body)
        value = _evaluate(expr) if expr is not None else None
    except KeyboardInterrupt as exc:
        _cancel_leftover_tasks()
        return ("interrupted" if _state.interrupted else "error"), None, _error_of(exc)
    except BaseException as exc:  # SystemExit too: user code must not end the kernel
        return "error", None, _error_of(exc)
    if value is None:
        return "ok", None, None
    _namespace["_"] = value
    try:
        text = repr(value)
    except BaseException as exc:
        text = "<repr failed: %s: %s>" % (type(exc).__name__, exc)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[:_MAX_VALUE_CHARS] + "... [repr cut at %d characters]" % _MAX_VALUE_CHARS
    return "ok", text, None


def _execute(message):
    run = str(message.get("run"))
    outcome = None
    try:
        with _state_lock:
            _state.run = run
            _state.last_run = run
            _state.interrupted = False
        try:
            outcome = _run_code(str(message.get("code", "")))
        except KeyboardInterrupt as exc:
            outcome = ("interrupted", None, _error_of(exc))
        finally:
            with _state_lock:
                _state.run = None
    except KeyboardInterrupt as exc:
        # An interrupt sent just as the run ended lands here; the run still reports.
        if outcome is None:
            outcome = ("interrupted", None, _error_of(exc))
    status, value, error = outcome
    try:
        _drain_fd1()
    except BaseException:
        pass
    for stream in (_stdout, _stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    _send({"t": "done", "run": run, "status": status, "value": value, "error": error})


# ---- the reader thread: frames from the host ----

_inbox = queue.Queue()


def _interrupt(run):
    with _state_lock:
        if _state.run is not None and _state.run == run:
            _state.interrupted = True
            signal.pthread_kill(_main_thread, signal.SIGINT)


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
            _inbox.put(message)
        elif kind == "interrupt":
            _interrupt(message.get("run"))
        elif kind == "res":
            slot = _sync_waiters.get(message.get("id"))
            if slot is not None:
                slot[1] = message
                slot[0].set()
            else:
                _loop.call_soon_threadsafe(_settle, message.get("id"), message)
    # stdin closed: the host is gone or done with us. Stop at once, even mid-run, so that
    # nothing keeps running after the bridge exits.
    os._exit(0)


def _main():
    signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=_reader, name="sandbox-reader", daemon=True).start()
    threading.Thread(target=_fd1_reader, name="sandbox-fd1", daemon=True).start()
    _send({"t": "ready", "python": platform.python_version(), "pid": os.getpid()})
    while True:
        try:
            message = _inbox.get()
        except KeyboardInterrupt:
            continue
        _execute(message)


_main()
