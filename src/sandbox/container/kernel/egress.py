# The sandbox's way out (sandbox.network). The container has no network interface but loopback;
# when the network lets anything through, the host mounts a folder holding its egress proxy's unix
# socket. A forwarder on 127.0.0.1 (a free port) pipes each connection to that socket, and the
# proxy variables point at it, so that urllib, requests, httpx and pip work unchanged. NO_PROXY is
# emptied: nothing in the container serves on loopback, and a listed `127.0.0.1:8080` is the
# host's, reached through the proxy. One thread serves every connection (the pids limit counts
# threads). Sandboxed code may stop it or use the socket itself: the proxy on the host decides
# what goes through. Started by kernel.py's _main (again in a restarted interpreter).

_EGRESS_SOCKET = "/run/cem-net/egress.sock"
# Beside it when sandbox.network lists the package index: the URL to give pip ("": its default).
_EGRESS_PIP_INDEX = "/run/cem-net/pip-index"
_EGRESS_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
_EGRESS_CHUNK = 65536


def _egress_socket_present():
    import stat

    try:
        return stat.S_ISSOCK(os.stat(_EGRESS_SOCKET).st_mode)
    except OSError:
        return False


def _start_egress(start_thread):
    """Listens on a free loopback port and points the proxy variables at it, when the host
    mounted the proxy's socket; returns the port, or None (no network)."""
    if not _egress_socket_present():
        return None
    import socket

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
    except OSError:
        listener.close()
        return None
    listener.setblocking(False)
    port = listener.getsockname()[1]
    url = "http://127.0.0.1:%d" % port
    for name in _EGRESS_PROXY_VARIABLES:
        os.environ[name] = url
    for name in ("NO_PROXY", "no_proxy"):
        os.environ[name] = ""
    _NETWORK["proxy"] = True  # hints.py: errors and import hints say so
    try:
        with open(_EGRESS_PIP_INDEX) as f:
            _NETWORK["pip"] = f.read(2048).strip()
    except OSError:
        pass
    start_thread(lambda: _egress_serve(listener), "sandbox-egress")
    return port


class _EgressPair:
    """One connection from sandboxed code and its leg to the proxy: bytes each way, buffered
    while the other side is slow (and then not read further), end-of-file passed on as a
    half-close."""

    def __init__(self, selector, client, upstream):
        self.selector = selector
        self.peer = {client: upstream, upstream: client}
        self.pending = {client: b"", upstream: b""}  # bytes waiting to be written to that socket
        self.ended = {client: False, upstream: False}  # that socket said end-of-file
        self.registered = set()
        for sock in (client, upstream):
            sock.setblocking(False)
            self.update(sock)

    def update(self, sock):
        import selectors

        events = 0
        if not self.ended[sock] and not self.pending[self.peer[sock]]:
            events |= selectors.EVENT_READ
        if self.pending[sock]:
            events |= selectors.EVENT_WRITE
        if not events:
            if sock in self.registered:
                self.selector.unregister(sock)
                self.registered.discard(sock)
        elif sock in self.registered:
            self.selector.modify(sock, events, self)
        else:
            self.selector.register(sock, events, self)
            self.registered.add(sock)

    def write(self, sock):
        import socket

        if self.pending[sock]:
            try:
                sent = sock.send(self.pending[sock])
            except BlockingIOError:
                sent = 0
            self.pending[sock] = self.pending[sock][sent:]
        if not self.pending[sock] and self.ended[self.peer[sock]]:
            try:
                sock.shutdown(socket.SHUT_WR)  # the other side ended: so does this direction
            except OSError:
                pass

    def handle(self, sock, events):
        import selectors

        peer = self.peer[sock]
        try:
            if events & selectors.EVENT_WRITE:
                self.write(sock)
            if events & selectors.EVENT_READ:
                data = sock.recv(_EGRESS_CHUNK)
                if data:
                    self.pending[peer] += data
                else:
                    self.ended[sock] = True
                self.write(peer)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            return self.close()
        if all(self.ended.values()) and not any(self.pending.values()):
            return self.close()
        for each in (sock, peer):
            self.update(each)

    def close(self):
        for sock in self.peer:
            if sock in self.registered:
                self.selector.unregister(sock)
            sock.close()
        self.registered.clear()


def _egress_refuse(client, why):
    """Tells the code why its request got nowhere, as the proxy's refusals do (never a hang)."""
    # An engine in a VM the runtime check did not recognise mounts the socket but cannot carry it.
    body = (
        "The sandbox's network proxy could not be reached (%s); run the code again, or reset the session. "
        "If it never could, the container engine runs containers in a VM, which cannot carry the proxy's socket: "
        "sandbox.network needs an engine on this machine's kernel (Docker Engine or Podman on Linux)." % why
    ).encode()
    head = "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
    try:
        client.settimeout(1.0)
        client.sendall(head.encode() + body)
    except OSError:
        pass
    client.close()


def _egress_accept(selector, listener):
    import socket

    while True:
        try:
            client, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.settimeout(5.0)
            upstream.connect(_EGRESS_SOCKET)
        except OSError as exc:
            upstream.close()
            _egress_refuse(client, exc.strerror or str(exc))
            continue
        _EgressPair(selector, client, upstream)


def _egress_serve(listener):
    import selectors

    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    while True:
        try:
            ready = selector.select()
        except InterruptedError:
            continue
        for key, events in ready:
            try:
                if key.data is None:
                    _egress_accept(selector, listener)
                else:
                    key.data.handle(key.fileobj, events)
            except OSError:
                # Out of descriptors, say: the waiting connections are tried again shortly.
                time.sleep(0.05)
