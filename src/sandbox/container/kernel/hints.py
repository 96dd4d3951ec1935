# Errors that carry their fix: what the kernel adds to the message of an error the code made
# (no network, a module that is not installed, a coroutine used without await), which frames a
# traceback leaves out (the kernel's, asyncio's, the runtimes'), and the same for the warning
# about a coroutine never awaited. Part of the kernel's source (before values.py, which uses
# it); Python 3.9+ and the standard library only, nothing else: it loads alone. Whatever runs
# in the interpreter (the MCP runtime) may add hooks with sandbox_host.add_error_hint(hook):
# hook(exc, kind, hint) returns a better hint, or None to keep the one it got; and hide its own
# frames with sandbox_host.hide_frames(filename). A kernel adds its own rules, tried before the
# common ones, with _add_error_rule(rule), and its own plumbing's frames with _hide_frames_under.
import errno as _errno
import os as _os
import sys as _sys

_error_hints = []
_error_rules = []  # a kernel's own: rule(exc) -> (kind, hint), or None to leave it to the next
# Frames of these files are plumbing, not the code's: the traceback leaves them out.
_HIDDEN_FILES = {"<kernel>"}
_STDLIB = _os.path.dirname(_os.__file__) + _os.sep
_HIDDEN_PREFIXES = tuple(_STDLIB + name + _os.sep for name in ("asyncio", "concurrent"))
_NETWORK_ERRNOS = {_errno.ENETUNREACH, _errno.EHOSTUNREACH, _errno.ENETDOWN, _errno.EADDRNOTAVAIL}
# What the standard library offers instead of common packages.
_INSTEAD = {
    "pandas": "csv, json, statistics or sqlite3",
    "numpy": "math, statistics or array",
    "scipy": "math or statistics",
    "yaml": "json",
    "dateutil": "datetime",
    "pytz": "zoneinfo",
    "bs4": "html.parser",
    "lxml": "xml.etree.ElementTree or html.parser",
}


def _frame_hidden(filename, network=False):
    """A frame the agent does not need: ours, asyncio's, and for a network error any of the
    standard library's (socket, urllib, http: the chain that ends in the DNS failure)."""
    if not isinstance(filename, str):
        return False
    if filename in _HIDDEN_FILES or filename.startswith(_HIDDEN_PREFIXES):
        return True
    return network and filename.startswith(_STDLIB)


def _causes(exc):
    """The exception, then what it wraps (URLError's reason, its cause or context)."""
    seen = set()
    while isinstance(exc, BaseException) and id(exc) not in seen and len(seen) < 10:
        seen.add(id(exc))
        yield exc
        reason = getattr(exc, "reason", None)
        if isinstance(reason, BaseException):
            yield reason
        exc = exc.__cause__ or exc.__context__


def _is_network_error(exc):
    socket = _sys.modules.get("socket")
    for part in _causes(exc):
        if socket is not None and isinstance(part, socket.gaierror):
            return True
        if isinstance(part, OSError) and part.errno in _NETWORK_ERRNOS:
            return True
        if "Temporary failure in name resolution" in str(part):
            return True
    return False


# Modules that exist to reach the network, which the sandbox does not have: whether they are
# installed or not, what the code wants is a way out (the MCP runtime names it: proxied servers).
_NETWORK_MODULES = {"requests", "httpx", "urllib3", "aiohttp", "httplib2", "pycurl", "websockets", "websocket", "grpc", "boto3", "botocore"}


def _installed_packages():
    """Distributions beside the standard library (a derived image's), pip and friends left out."""
    try:
        from importlib import metadata

        names = {(d.metadata.get("Name") or "").strip() for d in metadata.distributions()}
    except Exception:
        return []
    names -= {"", "pip", "setuptools", "wheel", "distribute"}
    return sorted(names, key=str.lower)


def _installed_sentence():
    """What is installed, when no host said it (the host's sentence names the notable ones first)."""
    count = len(_installed_packages())
    if count:
        return "Installed besides the standard library: %d distributions (importlib.metadata.distributions() lists them)." % count
    return "Only the Python standard library is installed."


def _missing_module(exc):
    """The top-level module an import did not find, else None (a submodule of a package that is
    there: the message says enough)."""
    name = getattr(exc, "name", None)
    return name if isinstance(name, str) and name and "." not in name else None


def _instead_of(name):
    """" Instead of <name> use <what the standard library offers>.", or "" if nothing is known."""
    instead = _INSTEAD.get(name)
    return " Instead of %s use %s." % (name, instead) if instead else ""


def _module_hint_text(name, installed=None, can_add=True, reach_out=""):
    """The hint of `import <name>` that found nothing: what is installed (`installed`, the
    host's sentence, else found here), whether sandbox.packages can add it (or pip, when the
    network lists the package index), and for a network library that the sandbox has no network
    (`reach_out`: where the network is instead)."""
    text = installed or _installed_sentence()
    pip = _pip_text(name) if can_add else None
    if pip:
        text += pip
    elif can_add:
        text += " pip is not available (no network); the user can add %s with the setting sandbox.packages (built into the sandbox image)." % name
    else:
        text += " Packages need the container sandbox (sandbox.packages)."
    if name in _NETWORK_MODULES and not _NETWORK["proxy"]:
        text += " " + _NO_NETWORK + (" " + reach_out if reach_out else "")
    return text + _instead_of(name)


# The sandbox's way out (egress.py sets these when the host mounted its proxy's socket): whether
# the proxy variables point at it, and pip's index when sandbox.network lists it (a URL, or ""
# for pip's default), else None.
_NETWORK = {"proxy": False, "pip": None}


def _pip_text(name):
    """How pip installs `name` into this session, when the index is listed and the image has pip."""
    index = _NETWORK["pip"]
    if index is None:
        return None
    try:
        import importlib.util

        if importlib.util.find_spec("pip") is None:
            return None
    except Exception:
        return None
    option = " --index-url %s" % index if index else ""
    return (
        " To use it in this session: python3 -m pip install --target /tmp/pkgs%s %s (a subprocess), then sys.path.insert(0, \"/tmp/pkgs\");"
        " to keep it, the user can add it with the setting sandbox.packages." % (option, name)
    )


def _module_hint(exc):
    name = _missing_module(exc)
    return None if name is None else _module_hint_text(name)


def _is_coroutine_misuse(exc):
    return isinstance(exc, (TypeError, AttributeError)) and "'coroutine' object" in _str_of(exc)


def _str_of(exc):
    try:
        return str(exc)
    except BaseException:
        return ""


_NO_NETWORK = "The sandbox has no network (by design): do not retry."
_PROXY_ONLY = "The sandbox reaches the network only through its proxy (HTTP_PROXY, HTTPS_PROXY), to the hosts sandbox.network allows: do not retry a direct connection."


def _no_network():
    return _PROXY_ONLY if _NETWORK["proxy"] else _NO_NETWORK


def _common_hint(exc):
    """(kind, hint) of the errors every kernel knows the fix of, else None."""
    if isinstance(exc, ModuleNotFoundError):
        hint = _module_hint(exc)
        return ("module", hint) if hint else None
    if _is_coroutine_misuse(exc):
        return "coroutine", "That value is a coroutine: an async function was called without await. Write: result = await f(...)"
    if isinstance(exc, OSError) and _is_network_error(exc):
        return "network", _no_network()
    return None


def _hint_of(exc):
    """(kind, hint) for an error whose fix can be said, else (None, None)."""
    kind = hint = None
    try:
        for rule in _error_rules + [_common_hint]:
            found = rule(exc)
            if found:
                kind, hint = found
                break
        for hook in list(_error_hints):
            better = hook(exc, kind, hint)
            if better:
                hint = better
    except Exception:
        pass  # a hint is a help, never a second error
    return kind, hint


def _add_error_hint(hook):
    _error_hints.append(hook)


def _hide_frames(filename):
    _HIDDEN_FILES.add(str(filename))


def _add_error_rule(rule):
    """A kernel's own errors: rule(exc) returns (kind, hint), or None; tried before the common ones."""
    _error_rules.append(rule)


def _hide_frames_under(*prefixes):
    """Leaves out of tracebacks every frame whose file name starts with one of `prefixes`."""
    global _HIDDEN_PREFIXES
    _HIDDEN_PREFIXES += tuple(str(prefix) for prefix in prefixes)


def _unawaited_warning(show):
    """warnings.showwarning that says how to fix a coroutine never awaited, in one line."""

    def showwarning(message, category, filename, lineno, file=None, line=None):
        text = _str_of(message)
        if category is RuntimeWarning and "was never awaited" in text:
            target = file or _sys.stderr
            name = text.split("'")[1] if text.count("'") >= 2 else "f"
            target.write("%s:%s: RuntimeWarning: %s: write result = await %s(...)\n" % (filename, lineno, text.splitlines()[0], name))
            return
        show(message, category, filename, lineno, file, line)

    return showwarning
