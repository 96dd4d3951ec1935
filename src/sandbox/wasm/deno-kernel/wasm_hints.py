# What only the WebAssembly sandbox says of an error: a module that is not there needs the
# container sandbox's packages, what WebAssembly cannot do (processes, threads, sockets) needs
# the container sandbox, and how Emscripten words a socket that reaches nothing; and the frames
# a traceback leaves out here (the whole standard library, the JavaScript frames Pyodide adds).
# Part of the WebAssembly kernel's source (after the container kernel's hints.py and values.py,
# whose helpers it uses; before kernel.py, whose start() installs it). Nothing happens at import
# beyond defining names.

# What needs a container sandbox, and says so.
_CONTAINER_FIX = "This needs the container sandbox (set sandbox.backend to \"container\" and install Podman or Docker: see docs/wasm.md)."
_WASM_PACKAGES = "Only Pyodide's standard library is installed (the WebAssembly sandbox has no packages)."
# The modules of hints.py's _INSTEAD whose stand-in is said here (not pytz: zoneinfo has no
# time zones without the tzdata package).
_WASM_INSTEAD = ("pandas", "numpy", "requests", "httpx", "yaml", "dateutil")
# sandbox.network lets something through, which a container sandbox would reach: set by a line the
# host adds after the kernel's files (wasm/source.ts), so that "no network" says why.
_WASM_NETWORK_SET = False
_WASM_NO_NETWORK = (
    "The WebAssembly sandbox has no network, whatever sandbox.network allows: only the container sandbox reaches the hosts it lists "
    "(set sandbox.backend to \"container\" and install Podman or Docker). Do not retry here."
)


def _wasm_no_network():
    return _WASM_NO_NETWORK if _WASM_NETWORK_SET else _NO_NETWORK


# The standard library's (asyncio, Pyodide's own) and the JavaScript frames Pyodide adds.
_WASM_HIDDEN_PREFIXES = ("/lib/python3", "file://", "wasm://", "ext:", "node:")


def _needs_container(exc):
    """Errors of what WebAssembly cannot do (processes, threads, sockets)."""
    text = _text_of(exc)
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


def _is_wasm_network_error(exc):
    """A socket that cannot reach anything (Emscripten says "Host is unreachable")."""
    if isinstance(exc, ConnectionError):
        return True
    text = _text_of(exc).lower()
    return isinstance(exc, OSError) and any(word in text for word in ("unreachable", "name resolution", "network", "socket"))


def _wasm_error_rule(exc):
    """(kind, hint) of the errors the WebAssembly sandbox words its own way, else None (hints.py's rules then)."""
    if isinstance(exc, ModuleNotFoundError):
        name = _missing_module(exc)
        if name is None:
            return None
        return "module", _wasm_module_hint(name)
    if _is_wasm_network_error(exc):
        return "network", _wasm_no_network()
    if _needs_container(exc):
        return "wasm", _CONTAINER_FIX
    return None


def _wasm_module_hint(name, installed=None, can_add=False, reach_out=""):
    """hints.py's _module_hint_text as the WebAssembly sandbox words it (sandbox_host.module_hint
    here): what is installed (`installed`, the host's sentence), that packages need a container,
    for a network library that there is no network (`reach_out`: where it is instead)."""
    text = (installed or _WASM_PACKAGES) + " Packages need the container sandbox (sandbox.packages)."
    if name in _NETWORK_MODULES:
        text += " " + _wasm_no_network() + (" " + reach_out if reach_out else "")
    return text + (_instead_of(name) if name in _WASM_INSTEAD else "")


def _install_wasm_hints():
    _add_error_rule(_wasm_error_rule)
    _hide_frames_under(*_WASM_HIDDEN_PREFIXES)
