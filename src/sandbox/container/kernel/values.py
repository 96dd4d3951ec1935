# What a run's code gives back, as text: its error (type, message with its hint, traceback
# without the kernel's frames, cut to the host's limits), its last value's repr, and the code
# compiled so that its last expression is that value. Part of the kernel's source (after
# hints.py, before kernel.py; one namespace). Pure: Python 3.9+ and the standard library, plus
# hints.py's _hint_of and _frame_hidden, looked up when called; nothing happens at import
# beyond defining names (no descriptors, threads or signals), so another kernel may load it
# on its own.
import ast
import traceback
import types

_MAX_TRACEBACK_FRAMES = 30
# Caps in code points, at most half the host's limits in UTF-16 units (an astral character
# counts twice there), so that nothing the code raises or returns makes a frame the host refuses.
_MAX_VALUE_CHARS = 1024 * 1024
_MAX_MESSAGE_CHARS = 30000
_MAX_TRACEBACK_CHARS = 120000
_MAX_TYPE_CHARS = 120
_MAX_SOURCE_LINE_CHARS = 240


def _cut(text, limit):
    """`text` with its middle cut to at most about `limit` characters."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return "%s\n... [%d characters cut] ...\n%s" % (text[:half], len(text) - 2 * half, text[-half:])


def _text_of(value, convert=str):
    try:
        return convert(value)
    except BaseException as exc:  # a __str__ that raises must not take the kernel with it
        return "<%s() failed: %s>" % (convert.__name__, type(exc).__name__)


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
    # str(exc) repeats msg, not the line; the message may still be huge on its own.
    if isinstance(exc.msg, str) and len(exc.msg) > _MAX_MESSAGE_CHARS:
        exc.msg = exc.msg[:_MAX_MESSAGE_CHARS] + "..."


def _traceback_text(exc, message=None, network=False):
    """The traceback; `message` (with its hint) replaces the exception's own last line."""
    try:
        if isinstance(exc, SyntaxError):
            _short_source_line(exc)
        report = traceback.TracebackException(type(exc), exc, exc.__traceback__, limit=-_MAX_TRACEBACK_FRAMES)
        if network:
            # Its chain (socket error, then URLError, then...) says "no network" at length.
            report.__cause__ = report.__context__ = None
        # Drop the kernel's own frames (its runner above the code, the interrupt handler and
        # print's plumbing below it), asyncio's and the runtime's, so the agent sees only its
        # code and what it called.
        pending, seen = [report], set()
        while pending:
            part = pending.pop()
            if part is None or id(part) in seen:
                continue
            seen.add(id(part))
            part.stack = traceback.StackSummary.from_list([f for f in part.stack if not _frame_hidden(f.filename, network)])
            pending += [part.__cause__, part.__context__]
        replaced = message is not None and hasattr(report, "_str")
        if replaced:
            report._str = message
        lines = list(report.format())
        if message is not None and not replaced:
            lines.append(message + "\n")
    except BaseException as failure:
        lines = ["%s (the traceback could not be formatted: %s)\n" % (type(exc).__name__, type(failure).__name__)]
    # One huge source line or message repeated in many frames: cut each line, then the whole.
    return _cut("".join(_cut(line, _MAX_TRACEBACK_CHARS // 4) for line in lines), _MAX_TRACEBACK_CHARS)


def _error_of(exc):
    kind, hint = _hint_of(exc)
    message = _text_of(exc)
    if len(message) > _MAX_MESSAGE_CHARS:
        message = message[:_MAX_MESSAGE_CHARS] + "... [message cut at %d characters]" % _MAX_MESSAGE_CHARS
    if hint:
        message = "%s\n%s" % (message, hint) if message else hint
    traceback_text = _traceback_text(exc, message if hint else None, kind == "network")
    return {"type": type(exc).__name__[:_MAX_TYPE_CHARS], "message": message, "traceback": traceback_text}


def _value_text(value):
    """repr of a run's last value, capped; a coroutine (a call without await) says so, and is closed."""
    if isinstance(value, types.CoroutineType):
        name = getattr(value, "__qualname__", "f")
        value.close()  # no "never awaited" warning: this says it
        return "<coroutine %s(), not awaited: write result = await %s(...)>" % (name, name)
    text = _text_of(value, repr)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[:_MAX_VALUE_CHARS] + "... [repr cut at %d characters]" % _MAX_VALUE_CHARS
    return text


def _compile(code, filename):
    tree = ast.parse(code, filename, "exec")
    flags = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
    tail = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        tail = ast.Expression(tree.body.pop().value)
    body = compile(tree, filename, "exec", flags=flags)
    expr = compile(tail, filename, "eval", flags=flags) if tail is not None else None
    return body, expr
