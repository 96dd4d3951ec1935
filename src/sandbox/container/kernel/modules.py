# What a failed import leaves behind. When a package's import fails half-way (a timeout's
# interrupt while `import asyncio` runs, an error in its __init__), Python drops the package from
# sys.modules but keeps the submodules it had loaded. The next import makes a fresh package that
# never gets those as attributes (Python binds a submodule to its parent only when it loads it),
# and the package fails on its own names: asyncio says "name 'coroutines' is not defined", in
# every later run of the session. After a run that failed, such orphans written in Python are
# forgotten, so the next import loads the package whole. Compiled ones stay: many may not be
# loaded twice in one process. Part of the kernel's source; the standard library only.
import sys as _sys


def _forget_orphan_modules():
    """Drops pure-Python submodules whose parent package is gone from sys.modules; their names."""
    modules = _sys.modules
    orphaned = set()
    # Parents first, so that a grandchild of a missing package counts as an orphan too.
    for name in sorted((n for n in list(modules) if "." in n), key=lambda n: n.count(".")):
        parent = name.rpartition(".")[0]
        if parent not in modules or parent in orphaned:
            orphaned.add(name)
    forgotten = []
    for name in sorted(orphaned):
        module = modules.get(name)
        origin = getattr(getattr(module, "__spec__", None), "origin", None)
        if isinstance(origin, str) and origin.endswith(".py"):
            modules.pop(name, None)
            forgotten.append(name)
    return forgotten


def _forget_after_failed_run():
    """_forget_orphan_modules, never raising: the run's report goes out whatever happens here."""
    try:
        _forget_orphan_modules()
    except BaseException:
        pass
