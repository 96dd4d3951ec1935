# The workspace snapshot, when the engine does not share the host's files (a remote one): the
# host streams the configured folders as a tar over the frame channel ("ws" frames) and this
# extracts it into /workspace, a tmpfs the container gets only then. Folders and regular files
# only, each path kept inside /workspace; then everything is made read-only (a-w). It is the
# sandbox's own copy: nothing written here ever reaches the user's files. Runs on the reader
# thread (frames in order: a snapshot is whole before the next run or reply is read), with one
# extracting thread fed through a pipe.
import base64
import os
import shutil
import stat
import tarfile
import threading

_WORKSPACE_ROOT = "/workspace"


class _Snapshot:
    pipe = None  # the write end of the extractor's pipe while a snapshot comes in
    thread = None
    error = None  # why the last snapshot failed, if it did
    extracted = 0  # files of the last snapshot
    text = None  # what the host says the last snapshot is ("snapshot of ... taken at ..."), or why there is none


_snapshot = _Snapshot()


def _workspace_path(name):
    """The place of an archive path under /workspace, or None for one that would leave it."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        return None
    return os.path.join(_WORKSPACE_ROOT, *parts)


def _workspace_clear():
    """Empties /workspace (the last snapshot's folders are made writable again first)."""
    for folder, dirs, _files in os.walk(_WORKSPACE_ROOT):
        try:
            os.chmod(folder, 0o755)
        except OSError:
            pass  # /workspace itself may be root's (podman's tmpfs)
    for name in os.listdir(_WORKSPACE_ROOT):
        path = os.path.join(_WORKSPACE_ROOT, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def _workspace_extract(read_fd):
    stream = os.fdopen(read_fd, "rb")
    count = 0
    try:
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            for member in archive:
                path = _workspace_path(member.name)
                if path is None:
                    continue
                if member.isdir():
                    os.makedirs(path, 0o755, exist_ok=True)
                elif member.isfile():
                    os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
                    source = archive.extractfile(member)
                    with open(path, "wb") as target:
                        shutil.copyfileobj(source, target, 1 << 20)
                    os.chmod(path, 0o644 | (member.mode & 0o111))
                    os.utime(path, (member.mtime, member.mtime))
                    count += 1
    except Exception as exc:
        _snapshot.error = "the workspace snapshot was not copied in whole: %s: %s" % (type(exc).__name__, exc)
    finally:
        # The rest is read to its end, so that the host's writes never wait on a pipe nobody reads.
        try:
            while stream.read(1 << 16):
                pass
        except Exception:
            pass
        stream.close()
        _snapshot.extracted = count


def _workspace_read_only():
    """a-w on every file and folder of /workspace, the deepest first."""
    for folder, dirs, files in os.walk(_WORKSPACE_ROOT, topdown=False):
        for name in files + [folder]:
            path = name if name is folder else os.path.join(folder, name)
            try:
                mode = os.lstat(path).st_mode
                if not stat.S_ISLNK(mode):
                    os.chmod(path, stat.S_IMODE(mode) & ~0o222)
            except OSError:
                pass


def _workspace_frame(message):
    """One "ws" frame of the host: begin, data, end."""
    op = message.get("op")
    if op == "begin":
        _workspace_finish()
        _snapshot.error = None
        try:
            _workspace_clear()
        except OSError as exc:
            _snapshot.error = "/workspace could not be emptied: %s" % exc
        read_fd, write_fd = os.pipe()
        _snapshot.pipe = write_fd
        _snapshot.thread = threading.Thread(target=_workspace_extract, args=(read_fd,), name="sandbox-workspace", daemon=True)
        _snapshot.thread.start()
        _kernel_threads.add(_snapshot.thread.ident)
    elif op == "data" and _snapshot.pipe is not None:
        view = memoryview(base64.b64decode(message.get("data", "")))
        try:
            while view:
                view = view[os.write(_snapshot.pipe, view):]
        except OSError:
            pass  # the extractor ended: its error says why
    elif op == "end":
        _workspace_finish()
        _workspace_read_only()
        _snapshot.text = str(message.get("text", ""))[:2000] or None


def _workspace_finish():
    """Ends a snapshot that is coming in: its pipe closed, its extractor waited for."""
    if _snapshot.pipe is None:
        return
    os.close(_snapshot.pipe)
    _snapshot.pipe = None
    _snapshot.thread.join()
    _snapshot.thread = None


def workspace_error():
    """Why the last workspace snapshot failed in the sandbox, or None."""
    return _snapshot.error


def workspace_snapshot():
    """What /workspace holds when it is a snapshot, in words, or None when it is not one."""
    return _snapshot.text
