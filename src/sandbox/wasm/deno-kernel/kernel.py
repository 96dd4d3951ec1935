# Code Execution Mode's WebAssembly kernel: the Python side, run by Pyodide inside the Deno
# worker (worker.ts). The last file of its source (../source.ts lists them, in order): before it
# come the container kernel's portable files (hints.py, values.py: errors, tracebacks and values
# as text; files_out.py: the files left under /work/out; streams.py: sys.stdout and sys.stderr)
# and wasm_hints.py, in one namespace, whose names this file uses. The worker hands it `bridge`,
# a few JavaScript functions that carry frames to the host: output, images, files and requests. It
# owns no descriptor and no thread: the worker's JavaScript sends `done`, and the main thread
# of the Deno process alone writes frames, so code here can neither forge a run's end nor write
# protocol bytes. Interrupts arrive as Pyodide's interrupt buffer (KeyboardInterrupt in running
# code) and, for code that awaits, as a cancel of the run's task.
import asyncio
import base64
import builtins
import io
import itertools
import json
import linecache
import os
import signal
import sys
import time

_MAX_METHOD_CHARS = 64
# The host's cap on a request frame (kernel-container.ts KERNEL_FRAME_LIMITS.req).
_MAX_REQUEST_BYTES = 10 * 1024 * 1024
_IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml")
_MAX_IMAGE_BYTES = 8 * 1024 * 1024


class _Kernel:
    bridge = None  # the worker's functions (see worker.ts bridge())
    task = None  # the run in progress, as an asyncio task
    cancelled = False  # that task was cancelled by an interrupt
    running = False  # the code of a run is running (not the kernel's own lines around it)
    serial = 0  # counts runs


_kernel = _Kernel()


# ---- interrupts: Pyodide's interrupt buffer calls Python's SIGINT handler ----


class _Caught:
    """Rides on the KeyboardInterrupt of the host's interrupt. Freed while its run goes on, it
    means the code caught the interrupt and went on: the host is told (`ignored`), so that it
    need not wait out the whole grace for code that will not stop."""

    def __init__(self, serial):
        self.serial = serial

    def __del__(self):
        if self.serial != _kernel.serial or not _kernel.running:
            return
        try:
            _kernel.bridge.ignored()
        except BaseException:
            pass


def _interruption():
    exc = KeyboardInterrupt()
    exc._cem_caught = _Caught(_kernel.serial)
    return exc


def _on_sigint(signum, frame):
    if not _kernel.running:
        return  # the kernel's own lines are never interrupted
    # Made by another function: a local here would hold the exception in a cycle with its own
    # traceback, and the marker would go only with the next garbage collection.
    raise _interruption()


# ---- output ----


def _send_out(stream, data):
    """The stream writers' (streams.py) way to the host; False: interrupted while the host was behind."""
    return _kernel.bridge.out(stream, data)


_stdout = _StreamWriter("stdout", _send_out)
_stderr = _StreamWriter("stderr", _send_out)


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
    _kernel.bridge.image(mime, base64.b64encode(data).decode("ascii"))


def emit_figures(strict=True):
    """matplotlib is not in the WebAssembly sandbox: nothing to emit."""
    return 0


# ---- requests to the host ----

_ids = itertools.count(1)


class HostError(Exception):
    """The host refused or failed a request; `kind` says why, `type` names the host-side error."""

    def __init__(self, type_, message, details=None, kind="failed"):
        super().__init__(message)
        self.type = type_
        self.kind = kind
        self.details = details if isinstance(details, dict) else {}


def _request_body(method, params):
    if not isinstance(method, str) or not 0 < len(method) <= _MAX_METHOD_CHARS:
        raise ValueError("method must be a string of 1 to %d characters" % _MAX_METHOD_CHARS)
    body = json.dumps(params, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    size = len(body.encode("utf-8", "replace"))
    if size > _MAX_REQUEST_BYTES - 1024:
        raise ValueError("the request is %d bytes; the limit is %d" % (size, _MAX_REQUEST_BYTES))
    return body


def _reply_value(text):
    message = json.loads(text)
    if message.get("ok"):
        return message.get("result")
    error = message.get("error") or {}
    raise HostError(str(error.get("type", "HostError")), str(error.get("message", "")), error.get("details"), str(error.get("kind", "failed")))


def request_sync(method, params=None):
    """Like request(), for code that cannot await: blocks until the host replies."""
    body = _request_body(method, params)
    _stdout.flush()
    reply = _kernel.bridge.request_sync(next(_ids), method, body)
    if reply is None:
        raise KeyboardInterrupt
    return _reply_value(reply)


async def request(method, params=None):
    """Ask the host to do `method` with JSON-serialisable `params`; returns its JSON result."""
    body = _request_body(method, params)
    _stdout.flush()
    reply = await _kernel.bridge.request_async(next(_ids), method, body)
    return _reply_value(reply)


# ---- files out (files_out.py): what the code leaves under /work/out comes back with the result ----


def _send(frame):
    """files_out.py's way to the host, for its `file` frames: the worker tags them with the run."""
    _kernel.bridge.file(json.dumps(frame))


# ---- executing code ----

_namespace = {"__name__": "__main__", "__builtins__": builtins, "emit_image": emit_image}
_run_count = [0]


async def _evaluate(code_object):
    result = eval(code_object, _namespace)
    if code_object.co_flags & 0x80:  # CO_COROUTINE: the code used top-level await
        result = await result
    return result


def _cancel_leftover_tasks():
    """Tasks the interrupted code started: cancelled, so that nothing of it runs on."""
    for task in asyncio.all_tasks():
        if task is not _kernel.task and not task.done():
            task.cancel()


async def _run_code(code):
    """One run: (status, value text or None, error or None)."""
    _run_count[0] += 1
    filename = "<run-%d>" % _run_count[0]
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        body, expr = _compile(code, filename)
    except SyntaxError as exc:
        return "error", None, _error_of(exc)
    try:
        _kernel.running = True
        await _evaluate(body)
        value = await _evaluate(expr) if expr is not None else None
        _kernel.running = False
        if value is None:
            return "ok", None, None
        _namespace["_"] = value
        return "ok", _value_text(value), None
    except (KeyboardInterrupt, asyncio.CancelledError) as exc:
        _kernel.running = False  # first: the interrupt that ends the run is not one ignored
        _cancel_leftover_tasks()
        if isinstance(exc, asyncio.CancelledError) and _kernel.cancelled:
            exc = KeyboardInterrupt()
        return ("interrupted" if _kernel.bridge.interrupted() else "error"), None, _error_of(exc)
    except BaseException as exc:  # SystemExit too: user code must not end the kernel
        _kernel.running = False
        return "error", None, _error_of(exc)
    finally:
        _kernel.running = False


async def _execute(code):
    try:
        status, value, error = await _run_code(code)
    except BaseException as exc:  # an interrupt on the kernel's own lines: the run still reports
        status, value, error = ("interrupted" if _kernel.bridge.interrupted() else "error"), None, _error_of(exc)
    if status != "ok":
        _forget_after_failed_run()
    # A cancel that came when the code no longer awaited must not cancel the report.
    task = asyncio.current_task()
    while task is not None and task.cancelling():
        task.uncancel()
    try:
        _stdout.flush()
        _stderr.flush()
        _collect_out(None)
    except BaseException as exc:
        try:
            _kernel.bridge.out("stderr", "[sandbox] output after the run was lost: %s\n" % type(exc).__name__)
        except BaseException:
            pass
    return json.dumps({"status": status, "value": value, "error": error}, ensure_ascii=False)


def execute(code):
    """Called by the worker for each `exec`: a task whose result is the outcome as JSON."""
    _kernel.cancelled = False
    _kernel.serial += 1
    signal.signal(signal.SIGINT, _on_sigint)  # in case the code replaced it
    _stdout.restart_clock()
    _stderr.restart_clock()
    _kernel.task = asyncio.ensure_future(_execute(str(code)))
    return _kernel.task


def interrupt():
    """Called by the worker when the host interrupts: code that awaits is cancelled (code that
    runs meets the interrupt buffer instead)."""
    task = _kernel.task
    if task is not None and not task.done():
        _kernel.cancelled = True
        task.cancel()


def _sleep(seconds):
    """time.sleep that an interrupt cuts short (Pyodide's own waits it out): blocks the worker,
    as CPython's blocks its thread, and wakes when the host interrupts."""
    seconds = float(seconds)
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        # Returns early when an interrupt is waiting; Python raises it at its next check.
        _kernel.bridge.sleep(min(left, 1.0))


def _no_processes(name):
    def refuse(*args, **kwargs):
        raise OSError(38, "%s is not available in the WebAssembly sandbox: it runs no processes" % name)

    return refuse


def start(bridge):
    """Installs the kernel: streams, the sandbox_host module, the out folder. Returns the version."""
    import types

    _kernel.bridge = bridge
    sys.stdout = _stdout
    sys.stderr = _stderr
    sys.stdin = io.StringIO("")
    host = types.ModuleType("sandbox_host")
    host.request = request
    host.request_sync = request_sync
    host.emit_image = emit_image
    host.emit_figures = emit_figures
    host.HostError = HostError
    host.add_error_hint = _add_error_hint
    host.hide_frames = _hide_frames
    host.module_hint = _wasm_module_hint
    sys.modules["sandbox_host"] = host
    import warnings

    warnings.showwarning = _unawaited_warning(warnings.showwarning)
    time.sleep = _sleep
    import posix

    for name in ("system", "fork", "forkpty", "posix_spawn", "posix_spawnp", "execv", "execve"):
        for module in (os, posix):
            if hasattr(module, name):
                setattr(module, name, _no_processes("os." + name))
    _install_wasm_hints()
    os.makedirs(_OUT_DIR, exist_ok=True)
    return "%d.%d.%d" % sys.version_info[:3]
