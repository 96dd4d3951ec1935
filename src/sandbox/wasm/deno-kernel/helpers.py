# What a sandbox kernel does to code and its outcome, independent of how frames travel: compile
# a run's code (top-level await, the last expression's value), say a value as text, and say an
# error as the agent sees it (message with its fix, traceback without the kernel's own frames).
# The Pyodide kernel (kernel.py beside this file) runs this source first in the same namespace.
# Python 3.9+, standard library only; nothing here touches the protocol, files or threads.
import ast
import sys
import traceback
import types

_MAX_TRACEBACK_FRAMES = 30
# Caps in code points, as the container kernel's: at most half the host's limits in UTF-16 units.
_MAX_VALUE_CHARS = 1024 * 1024
_MAX_MESSAGE_CHARS = 30000
_MAX_TRACEBACK_CHARS = 120000
_MAX_TYPE_CHARS = 120
_MAX_SOURCE_LINE_CHARS = 240

# Frames of these files are plumbing, not the code's: tracebacks leave them out.
_HIDDEN_FILES = {"<kernel>"}
# The standard library's (asyncio, Pyodide's own) and the JavaScript frames Pyodide adds.
_HIDDEN_PREFIXES = ("/lib/python3", "file://", "wasm://", "ext:", "node:")
_error_hints = []  # hooks hook(exc, kind, hint) -> better hint or None (sandbox_host.add_error_hint)
# What needs a container sandbox, and says so.
_CONTAINER_FIX = "This needs the container sandbox (set sandbox.backend to \"container\" and install Podman or Docker: see docs/wasm.md)."
_INSTEAD = {
    "pandas": "csv, json, statistics or sqlite3",
    "numpy": "math, statistics or array",
    "requests": "nothing: there is no network",
    "httpx": "nothing: there is no network",
    "yaml": "json",
    "dateutil": "datetime",
}


def cut(text, limit):
    """`text` with its middle cut to at most about `limit` characters."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return "%s\n... [%d characters cut] ...\n%s" % (text[:half], len(text) - 2 * half, text[-half:])


def text_of(value, convert=str):
    try:
        return convert(value)
    except BaseException as exc:  # a __str__ that raises must not take the kernel with it
        return "<%s() failed: %s>" % (convert.__name__, type(exc).__name__)


def value_text(value):
    """repr of a run's last value, capped; a coroutine (a call without await) says so, and is closed."""
    if isinstance(value, types.CoroutineType):
        name = getattr(value, "__qualname__", "f")
        value.close()
        return "<coroutine %s(), not awaited: write result = await %s(...)>" % (name, name)
    text = text_of(value, repr)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[:_MAX_VALUE_CHARS] + "... [repr cut at %d characters]" % _MAX_VALUE_CHARS
    return text


def compile_run(code, filename):
    """(body, tail): the code without its last expression, and that expression (or None), both
    compiled with top-level await allowed."""
    tree = ast.parse(code, filename, "exec")
    flags = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
    tail = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        tail = ast.Expression(tree.body.pop().value)
    body = compile(tree, filename, "exec", flags=flags)
    expr = compile(tail, filename, "eval", flags=flags) if tail is not None else None
    return body, expr


def frame_hidden(filename):
    if not isinstance(filename, str):
        return False
    return filename in _HIDDEN_FILES or filename.startswith(_HIDDEN_PREFIXES)


def hide_frames(filename):
    _HIDDEN_FILES.add(str(filename))


def add_error_hint(hook):
    _error_hints.append(hook)


def _short_source_line(exc):
    """A SyntaxError of a huge one-line literal: keep a window of the line around the error."""
    text = exc.text
    if not isinstance(text, str) or len(text) <= _MAX_SOURCE_LINE_CHARS:
        return
    offset = exc.offset if isinstance(exc.offset, int) and exc.offset > 0 else 1
    start = max(0, offset - 1 - _MAX_SOURCE_LINE_CHARS // 2)
    end = start + _MAX_SOURCE_LINE_CHARS
    prefix = "..." if start else ""
    exc.text = prefix + text[start:end] + ("..." if end < len(text) else "")
    exc.offset = offset - start + len(prefix)
    end_offset = getattr(exc, "end_offset", None)
    if isinstance(end_offset, int) and end_offset > 0:
        exc.end_offset = min(end_offset - start + len(prefix), len(exc.text) + 1)
    if isinstance(exc.msg, str) and len(exc.msg) > _MAX_MESSAGE_CHARS:
        exc.msg = exc.msg[:_MAX_MESSAGE_CHARS] + "..."


def traceback_text(exc, message=None, network=False):
    """The traceback without hidden frames; `message` (with its hint) replaces the exception's own last line."""
    try:
        if isinstance(exc, SyntaxError):
            _short_source_line(exc)
        report = traceback.TracebackException(type(exc), exc, exc.__traceback__, limit=-_MAX_TRACEBACK_FRAMES)
        if network:
            # Its chain (socket error, then URLError, then...) says "no network" at length.
            report.__cause__ = report.__context__ = None
        pending, seen = [report], set()
        while pending:
            part = pending.pop()
            if part is None or id(part) in seen:
                continue
            seen.add(id(part))
            part.stack = traceback.StackSummary.from_list([f for f in part.stack if not frame_hidden(f.filename)])
            pending += [part.__cause__, part.__context__]
        replaced = message is not None and hasattr(report, "_str")
        if replaced:
            report._str = message
        lines = list(report.format())
        if message is not None and not replaced:
            lines.append(message + "\n")
    except BaseException as failure:
        lines = ["%s (the traceback could not be formatted: %s)\n" % (type(exc).__name__, type(failure).__name__)]
    return cut("".join(cut(line, _MAX_TRACEBACK_CHARS // 4) for line in lines), _MAX_TRACEBACK_CHARS)


def _module_hint(exc):
    name = getattr(exc, "name", None)
    if not isinstance(name, str) or not name or "." in name:
        return None
    text = "Only the Python standard library is available in the WebAssembly sandbox; packages need the container sandbox (sandbox.packages)."
    instead = _INSTEAD.get(name)
    if instead:
        text += " Instead of %s use %s." % (name, instead)
    return text


def _needs_container(exc):
    """Errors of what WebAssembly cannot do (processes, threads, sockets)."""
    text = text_of(exc)
    if isinstance(exc, RuntimeError) and "can't start new thread" in text:
        return True
    if isinstance(exc, OSError) and getattr(exc, "errno", None) in (38, 52, 58, 138):  # ENOSYS, ENOTSUP and friends
        return True
    # Only the runtime's own words: a tool's or the code's message that merely mentions a
    # "filesystem" or a "subprocess" server is not Emscripten refusing a process.
    if isinstance(exc, AttributeError):
        return "emscripten" in text.lower()
    return isinstance(exc, (OSError, NotImplementedError)) and any(
        word in text for word in ("fork", "spawn", "not supported on emscripten", "does not support processes")
    )


def _is_network_error(exc):
    """A socket that cannot reach anything (Emscripten says "Host is unreachable")."""
    if isinstance(exc, ConnectionError):
        return True
    text = text_of(exc).lower()
    return isinstance(exc, OSError) and any(word in text for word in ("unreachable", "name resolution", "network", "socket"))


def hint_of(exc):
    """(kind, hint) for an error whose fix can be said, else (None, None)."""
    kind = hint = None
    try:
        if isinstance(exc, ModuleNotFoundError):
            hint = _module_hint(exc)
            kind = "module" if hint else None
        elif isinstance(exc, (TypeError, AttributeError)) and "'coroutine' object" in text_of(exc):
            kind = "coroutine"
            hint = "That value is a coroutine: an async function was called without await. Write: result = await f(...)"
        elif _is_network_error(exc):
            kind = "network"
            hint = "The sandbox has no network (by design): do not retry."
        elif _needs_container(exc):
            kind = "wasm"
            hint = _CONTAINER_FIX
        for hook in list(_error_hints):
            better = hook(exc, kind, hint)
            if better:
                hint = better
    except Exception:
        pass  # a hint is a help, never a second error
    return kind, hint


def error_of(exc):
    """The `error` of a `done` frame: type, message with its hint, traceback."""
    kind, hint = hint_of(exc)
    message = text_of(exc)
    if len(message) > _MAX_MESSAGE_CHARS:
        message = message[:_MAX_MESSAGE_CHARS] + "... [message cut at %d characters]" % _MAX_MESSAGE_CHARS
    if hint:
        message = "%s\n%s" % (message, hint) if message else hint
    return {
        "type": type(exc).__name__[:_MAX_TYPE_CHARS],
        "message": message,
        "traceback": traceback_text(exc, message if hint else None, kind == "network"),
    }


def unawaited_warning(show):
    """warnings.showwarning that says how to fix a coroutine never awaited, in one line (as the container kernel's hints.py)."""

    def showwarning(message, category, filename, lineno, file=None, line=None):
        text = text_of(message)
        if category is RuntimeWarning and "was never awaited" in text:
            target = file or sys.stderr
            name = text.split("'")[1] if text.count("'") >= 2 else "f"
            target.write("%s:%s: RuntimeWarning: %s: write result = await %s(...)\n" % (filename, lineno, text.splitlines()[0], name))
            return
        show(message, category, filename, lineno, file, line)

    return showwarning
