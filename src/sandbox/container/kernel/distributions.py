# The image's installed distributions, for the `ready` frame of a fresh container: the names of
# the *.dist-info and *.egg-info entries on sys.path, bounded. Part of the kernel's source
# (before kernel.py; one namespace). Python 3.9+ and the standard library. Nothing happens at
# import beyond defining names. Looked up when called: _CWD, the kernel's working folder at its
# start (left out of the scan).
import os
import sys

_MAX_DISTS = 500
_MAX_DIST_NAME_CHARS = 100
_MAX_DIST_ENTRIES = 20000
_MAX_DIST_PATHS = 64


def _image_distributions(paths=None, max_entries=_MAX_DIST_ENTRIES, max_paths=_MAX_DIST_PATHS):
    """The image's installed distributions, from the names of the *.dist-info and *.egg-info
    entries on sys.path (no import: importlib.metadata alone costs ~35 ms per start). Bounded:
    folders and entries looked at (the scan stops there), names sent, name length; returns
    (names, left_out)."""
    names = set()
    left_out = 0
    scanned = 0
    for path in (sys.path if paths is None else paths)[:max_paths]:
        if not path or path == _CWD or not isinstance(path, str):
            continue  # the working folder is the code's, not the image's
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    scanned += 1
                    if scanned > max_entries:
                        break
                    if entry.name.endswith((".dist-info", ".egg-info")):
                        # "zope.interface-5.0.dist-info", "lz4-4.0.2+dfsg.egg-info", "foo.egg-info"
                        name = entry.name.rsplit(".", 1)[0].split("-", 1)[0]
                        if not name or len(name) > _MAX_DIST_NAME_CHARS:
                            left_out += 1
                        else:
                            names.add(name)
        except OSError:
            continue
        if scanned > max_entries:
            break
    ordered = sorted(names, key=str.lower)
    return ordered[:_MAX_DISTS], left_out + max(0, len(ordered) - _MAX_DISTS)
