# Plots: matplotlib's figures come back as PNG images. Part of the kernel's source (after
# values.py, before kernel.py; one namespace). Python 3.9+ and the standard library. Nothing
# happens at import beyond defining names and reading MPLBACKEND: _install_plots() puts the
# hooks in place. Looked up when called: emit_image(data) and _stderr (the run's stderr), which
# the kernel defines, _cut (values.py), and a module sandbox_host whose emit_figures is this
# file's (the backend's show() calls it).
#
# matplotlib is never imported here (it costs a fresh interpreter a second or more). When the
# code imports it, the hook below makes the kernel's backend matplotlib's default (unless the code
# set MPLBACKEND to another), and a finder provides that backend module, so plt.show() emits the
# open figures; figures still open at the end of a run are emitted too. Each figure is closed once
# emitted. The environment keeps the container's MPLBACKEND=Agg: a child process (even one given
# env={**os.environ}) draws with plain Agg, as it cannot import the kernel's backend.
import io
import os
import sys

_PLOTS_MODULE = "_sandbox_plots"
_PLOTS_BACKEND = "module://" + _PLOTS_MODULE
_PLOTS_DPI = 100  # matplotlib's default figure (6.4 x 4.8 in) is then 640 x 480 pixels
_MAX_PLOT_SIDE = 1600  # pixels: a bigger figure is rendered at a lower dpi
_PLOTS_SOURCE = """
from matplotlib.backends.backend_agg import FigureCanvasAgg as FigureCanvas
import sandbox_host as _host

def show(*args, **kwargs):
    _host.emit_figures()
"""


class _PlotsBackendFinder:
    """Makes the backend module importable, only when matplotlib asks for it."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != _PLOTS_MODULE:
            return None
        import importlib.machinery

        return importlib.machinery.ModuleSpec(name, _PlotsBackendFinder)

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(module):
        # "<kernel>": its frames are left out of tracebacks like the kernel's own.
        exec(compile(_PLOTS_SOURCE, "<kernel>", "exec"), module.__dict__)


# What the container set (see engines/commands.ts): a value the code sets instead is its choice.
_CONTAINER_MPLBACKEND = os.environ.get("MPLBACKEND", "")


class _MatplotlibLoader:
    """matplotlib's own loader, then the kernel's backend as its default."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        if os.environ.get("MPLBACKEND", "") in ("", _CONTAINER_MPLBACKEND):
            module.rcParams["backend"] = _PLOTS_BACKEND


class _MatplotlibHook:
    """Finds matplotlib as the other finders do, with its loader wrapped (see above)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "matplotlib":
            return None
        for finder in sys.meta_path:
            if finder is _MatplotlibHook or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _MatplotlibLoader(spec.loader)
                return spec
        return None


def _install_plots():
    """Puts the hook and the backend's finder on sys.meta_path, once, at the kernel's start."""
    sys.meta_path.append(_PlotsBackendFinder)
    sys.meta_path.insert(0, _MatplotlibHook)
    # The root file system is read-only: matplotlib's font cache goes to the tmpfs.
    os.environ.setdefault("MPLCONFIGDIR", "/tmp/matplotlib")


def _plot_dpi(width_inches, height_inches, dpi):
    """The dpi a figure is rendered at: its own, lowered so that neither side passes the cap."""
    dpi = dpi if isinstance(dpi, (int, float)) and dpi > 0 else _PLOTS_DPI
    longest = max(width_inches, height_inches, 1e-3)
    return min(dpi, _MAX_PLOT_SIDE / longest)


def emit_figures(strict=True):
    """Emits every open matplotlib figure as a PNG image and closes it; returns how many were
    emitted. With strict=False (the end of a run) a figure that fails is said on stderr."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return 0
    import matplotlib

    if matplotlib.get_backend() != _PLOTS_BACKEND:
        return 0  # the code chose another backend: its figures are its own business
    emitted = 0
    for number in list(plt.get_fignums()):
        figure = plt.figure(number)
        try:
            width, height = figure.get_size_inches()
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png", dpi=_plot_dpi(width, height, figure.dpi))
            emit_image(buffer.getvalue())
            emitted += 1
        except Exception as exc:
            if strict:
                raise
            _stderr.write("[sandbox] figure %s not shown: %s: %s\n" % (number, type(exc).__name__, _cut(str(exc), 300)))
        finally:
            plt.close(figure)
    return emitted
