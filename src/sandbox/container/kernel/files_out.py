# Files out: what the code leaves under /work/out comes back with the result, as `file` frames
# (capped: count, size, total, entries looked at), and the folder is emptied. Part of the
# kernel's source (before kernel.py; one namespace). Python 3.9+ and the standard library.
# Nothing happens at import beyond defining names. Looked up when called: _send(message), the
# kernel's frame to the host.
import base64
import os

_OUT_DIR = "/work/out"
_MAX_OUT_FILES = 20  # files sent per run; the rest are named (path, size) without content
_MAX_OUT_FILE_BYTES = 4 * 1024 * 1024  # one file's content; the host checks it again
_MAX_OUT_TOTAL_BYTES = 8 * 1024 * 1024  # all files of a run together
_MAX_OUT_LISTED = 200  # entries looked at; a deeper or bigger tree is cut (and said)


def _make_out_dir():
    try:
        os.makedirs(_OUT_DIR, exist_ok=True)
    except OSError:
        pass


def _collect_out(run):
    """Sends the files under /work/out as `file` frames (capped), then empties the folder."""
    import shutil
    import stat as stat_module
    try:
        if not os.listdir(_OUT_DIR):
            return
    except OSError:
        _make_out_dir()
        return
    found = []
    for root, dirs, files in os.walk(_OUT_DIR, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            found.append(os.path.join(root, name))
        if len(found) >= _MAX_OUT_LISTED:
            break
    sent = 0
    total = 0
    cut = len(found) > _MAX_OUT_LISTED
    found = sorted(found[:_MAX_OUT_LISTED])
    for path in found:
        rel = os.path.relpath(path, _OUT_DIR)
        frame = {"t": "file", "run": run, "path": rel[:500]}
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat_module.S_ISREG(info.st_mode):
            continue  # symbolic links, fifos, sockets: never followed
        frame["bytes"] = info.st_size
        if info.st_size > _MAX_OUT_FILE_BYTES:
            frame["skipped"] = "size"
        elif sent >= _MAX_OUT_FILES:
            frame["skipped"] = "count"
        elif total + info.st_size > _MAX_OUT_TOTAL_BYTES:
            frame["skipped"] = "total"
        else:
            try:
                with open(path, "rb") as f:
                    data = f.read(_MAX_OUT_FILE_BYTES + 1)
            except OSError:
                continue
            if len(data) > _MAX_OUT_FILE_BYTES:
                frame["skipped"] = "size"
            else:
                frame["bytes"] = len(data)
                frame["data"] = base64.b64encode(data).decode("ascii")
                sent += 1
                total += len(data)
        _send(frame)
    if cut:
        _send({"t": "file", "run": run, "path": "...", "bytes": 0, "skipped": "listing"})
    # Emptied, so a file comes back once.
    for name in os.listdir(_OUT_DIR):
        path = os.path.join(_OUT_DIR, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass
