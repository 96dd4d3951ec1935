# The run's stdout and stderr as Python sees them (sys.stdout, sys.stderr and their .buffer):
# text is buffered and handed on in chunks, at 64 K characters or when 0.1 s has passed since
# the last hand-over, through the `send(stream, text)` each writer is made with (the kernel's
# frames to the host), which returns False when an interrupt cut it short. Part of the kernel's
# source (before kernel.py, which makes the writers; one namespace). Python 3.9+ and the
# standard library. Nothing happens at import beyond defining names.
import codecs
import io
import threading
import time

_CHUNK_CHARS = 64 * 1024
_FLUSH_SECONDS = 0.1


class _StreamWriter(io.TextIOBase):
    """sys.stdout / sys.stderr: buffers text and hands it to `send` in chunks."""

    def __init__(self, name, send):
        super().__init__()
        self._name = name
        self._send = send
        self._parts = []
        self._size = 0
        self._last_flush = time.monotonic()
        self._lock = threading.RLock()
        self._buffer = None

    @property
    def encoding(self):
        return "utf-8"

    @property
    def buffer(self):
        """Bytes written here reach the same stream, as UTF-8 (code that writes bytes expects it)."""
        if self._buffer is None:
            self._buffer = _StreamBuffer(self)
        return self._buffer

    @property
    def errors(self):
        return "replace"

    def writable(self):
        return True

    def isatty(self):
        return False

    def write(self, text):
        # Not guarded: buffering is safe to interrupt, and this is print's hot path.
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        if not text:
            return 0
        with self._lock:
            self._parts.append(text)
            self._size += len(text)
            due = self._size >= _CHUNK_CHARS or time.monotonic() - self._last_flush >= _FLUSH_SECONDS
        if due:
            self.flush()
        return len(text)

    def restart_clock(self):
        """A run's first print waits for company, as later ones do."""
        self._last_flush = time.monotonic()

    def flush(self):
        with self._lock:
            if not self._parts:
                return
            data = "".join(self._parts)
            self._parts = []
            self._size = 0
            self._last_flush = time.monotonic()
            for start in range(0, len(data), _CHUNK_CHARS):
                if not self._send(self._name, data[start:start + _CHUNK_CHARS]):
                    return  # interrupted while the host was behind: the rest is dropped


class _StreamBuffer(io.BufferedIOBase):
    """sys.stdout.buffer: decodes UTF-8 as it comes (a character may be split between writes)."""

    def __init__(self, text):
        super().__init__()
        self._text = text
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def writable(self):
        return True

    def write(self, data):
        data = bytes(memoryview(data))
        self._text.write(self._decoder.decode(data))
        return len(data)

    def flush(self):
        self._text.flush()
