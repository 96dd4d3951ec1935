# The MCP runtime inside the sandbox: the module `mcp.runtime`, loaded once per interpreter.
# It gives sandboxed code the proxied servers as objects (`mcp_<server>.<tool>(**kwargs)`),
# call_tool(), discovery and search. Every call goes through the host, which applies policy.
# Tool functions check their keywords against the tool's schema before a call, and errors the
# kernel reports get hints only this side knows (server names). Python 3.9+.
import inspect
import json
import os
import sys
import types

import sandbox_host as _host

__all__ = [
    "ToolError",
    "call_tool",
    "discovered_servers",
    "search_tool_docs",
    "query_tool_docs",
    "run_snippet",
    "SnippetError",
    "capability_summary",
    "list_resources",
    "list_resource_templates",
    "read_resource",
    "list_prompts",
    "get_prompt",
    "refresh_workspace",
]

_SERVERS = []  # filled by _install: [{"name": ..., "alias": ..., "description": ...}]
_proxies = {}


class ToolError(Exception):
    """A tool call failed: the tool reported an error (kind "tool-error"), or the bridge refused
    or could not make the call ("denied", "unknown-server", "unknown-tool", "unavailable",
    "server-error" when the server answered with a JSON-RPC error: see .code and .data,
    "too-large" for arguments or a result over the bridge's size limits, or "needs-consent" for
    a server the workspace defines and the user has not allowed yet). A call that needs the
    user's confirmation raises kind "declined" when the user declines, cancels or does not
    answer in time, and "needs-confirmation" when the bridge's client cannot be asked."""

    # A JSON-RPC error the server answered with (kind "server-error") also carries .code (int)
    # and .data (the error's data, capped by the bridge, or None); other kinds have None there.
    # A tool-reported error (kind "tool-error") carries .structured (its structuredContent or
    # None) and .content (its content items: text, images, audio, resource links, each with
    # its annotations and _meta when the server gave them).

    def __init__(self, server, tool, message, kind="tool-error", code=None, data=None, structured=None, content=None):
        # A refusal of no one tool (a search) has neither server nor tool: its message alone.
        super().__init__("%s.%s: %s" % (server, tool, message) if server is not None else message)
        self.server = server
        self.tool = tool
        self.kind = kind
        self.code = code
        self.data = data
        self.structured = structured
        self.content = content


def _host_tool_error(server, tool, error):
    """The ToolError for a host error (a HostError of the kernel)."""
    details = getattr(error, "details", None) or {}
    return ToolError(server, tool, str(error), getattr(error, "kind", "failed"), code=details.get("code"), data=details.get("data"))


async def call_tool(server, tool, args=None, *, raw=False, **kwargs):
    """Calls `tool` of `server` with the arguments in `args` (a dict) and/or keywords.
    Returns the tool's structured content when it has one, else its text (a list when there
    are several content items; images, audio and resource links as dicts with their
    annotations and _meta). Raises ToolError when the tool reports an error.
    raw=True returns the whole result instead, and does not raise for a tool-reported error:
    {"content": [{"type": "text", "text": ..., "annotations"?: ..., "_meta"?: ...}, ...],
    "structuredContent"?: ..., "isError": bool, "_meta"?: ...}. (A tool argument named "raw"
    goes in `args`.)"""
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise TypeError("call_tool(server, tool, args): args must be a dict, not %s" % type(args).__name__)
    arguments = dict(args)
    arguments.update(kwargs)
    params = {"server": server, "tool": tool, "arguments": arguments}
    if raw:
        params["raw"] = True
    try:
        reply = await _host.request("call_tool", params)
    except _host.HostError as error:
        raise _host_tool_error(server, tool, error) from None
    if reply.get("returnType"):
        _retype(server, tool, reply["returnType"], reply.get("returns"))
    if reply.get("isError"):
        raise ToolError(
            server,
            tool,
            reply.get("errorText") or "the tool reported an error",
            structured=reply.get("errorStructured"),
            content=reply.get("errorContent"),
        )
    return reply.get("value")


def _retype(server, tool, return_type, returns):
    """The host learned what `tool` returns (text each time, or other content): its function's
    signature and Returns line in help() say so from now on, as search hits do."""
    proxy = _proxies.get(server)
    function = (proxy.__dict__.get("_tools") or {}).get(tool) if proxy is not None else None
    signature = getattr(function, "__signature__", None)
    if signature is None:
        return
    function.__signature__ = signature.replace(return_annotation=_Shape(return_type))
    if returns and function.__doc__:
        lines = function.__doc__.split("\n")
        function.__doc__ = "\n".join("Returns: %s" % returns if line.startswith("Returns: ") else line for line in lines)


async def _server_request(server, method, params, what):
    try:
        return await _host.request(method, dict(params, server=server))
    except _host.HostError as error:
        raise _host_tool_error(server, what, error) from None


async def _listing(server, method):
    reply = await _server_request(server, method, {}, method)
    if reply.get("note"):
        sys.stderr.write("%s(%r): %s\n" % (method, server, reply["note"]))
    return reply.get("items") or []


async def list_resources(server):
    """The resources `server` offers: a list of dicts with uri and name, and when the server
    gives them title, description, mimeType, size, annotations, _meta. Read one with
    read_resource(server, uri). Raises ToolError (kind "unavailable" when the server offers no
    resources or could not start)."""
    return await _listing(server, "list_resources")


async def list_resource_templates(server):
    """The resource templates of `server`: dicts with uriTemplate (RFC 6570, e.g.
    "file:///{path}") and name, maybe title, description, mimeType. Fill one in and pass the URI
    to read_resource()."""
    return await _listing(server, "list_resource_templates")


async def read_resource(server, uri):
    """The contents of the resource `uri` of `server` (from list_resources(), a filled-in
    template, or a {"type": "resource_link", "uri": ...} a tool returned): a list of dicts, each
    with uri, maybe mimeType and _meta, and either text (str) or blob (base64 str: decode with
    base64.b64decode)."""
    return await _server_request(server, "read_resource", {"uri": str(uri)}, "read_resource")


async def list_prompts(server):
    """The prompts of `server`: dicts with name, maybe title, description and arguments
    ([{name, description, required}]). Fill one in with get_prompt()."""
    return await _listing(server, "list_prompts")


async def get_prompt(server, name, arguments=None):
    """The prompt `name` of `server` filled in with `arguments` (a dict of str): a dict with
    messages ([{role: "user" | "assistant", content: {type: "text", text} or an image, audio or
    resource item}]) and maybe description."""
    args = {} if arguments is None else arguments
    if not isinstance(args, dict):
        raise TypeError("get_prompt(server, name, arguments): arguments must be a dict of str, not %s" % type(args).__name__)
    args = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in args.items()}
    return await _server_request(server, "get_prompt", {"name": name, "arguments": args}, "get_prompt")


def discovered_servers():
    """One dict per enabled server: name, alias, description, tools (count, when known, cached
    ones too), toolNames (their Python names, the first 60), instructions (what the server
    says of itself when it starts, capped; its words, not the bridge's), status
    ("not-started", "starting", "running", "error", or "awaiting-consent" / "declined" for a
    server the workspace defines and the user has not allowed) and, for those, the reason;
    "warning" says what of its tool list was left out by the bridge's limits. Servers whose tools
    are not known yet are started; this waits for them up to proxy.discoveryWaitSeconds (10 s by
    default), off the run's clock."""
    return _host.request_sync("list_servers", {})


def refresh_workspace():
    """Copies the workspace into /workspace again, when the sandbox runs on a remote engine (which
    cannot mount this machine's folders and gets a read-only snapshot instead), and returns what
    it holds: {"mode": "snapshot", "folders", "files", "bytes", "taken", "text"}. Where the folders
    are mounted the files are live: {"mode": "mounted", ...}, nothing copied. The copy is the
    sandbox's own: changes to it never reach the user's files."""
    reply = _host.request_sync("refresh_workspace", {})
    error = _host.workspace_error() if hasattr(_host, "workspace_error") else None
    if error:
        raise OSError(error)
    return reply


async def search_tool_docs(query, limit=5, detail="summary"):
    """Ranked search over every enabled server's tools, best first. Each hit has server, tool,
    alias, description, signature (as help() shows it) and score: from 0 to 1, how much of the
    request the tool answers (comparable within one search, roughly across searches); "hint":
    "read-only" or "destructive" when the server says so. detail="full" adds returns and
    inputSchema (and title, annotations, outputSchema, icons, _meta when the server gives them).
    [] means no tool of the configured servers does this: a note on stderr names them, and a
    well-known service the request names that none provides ("Google Drive"), also with hits.
    When every hit scores low, a note on stderr says they may not do it and names the servers.
    Servers still starting are waited for (as in discovered_servers()); those whose tools are
    still not known (starting, or failed) are named in one line on stderr. No hit while a server
    is still starting raises ToolError (kind "unavailable") naming it, so [] always means
    nothing fits."""
    try:
        reply = await _host.request("search_tools", {"query": str(query), "limit": int(limit), "detail": detail})
    except _host.HostError as error:
        raise _host_tool_error(None, None, error) from None
    if isinstance(reply, list):
        return [_shown_doc(doc) for doc in reply]
    not_ready = reply.get("notReady") or []
    if not_ready:
        sys.stderr.write("search_tool_docs: not searched yet: %s\n" % ", ".join(_not_ready_text(s) for s in not_ready))
    hits = [_shown_doc(doc) for doc in reply.get("hits") or []]
    unserved = [str(name) for name in reply.get("unserved") or []][:3]
    if not hits and reply.get("servers") is not None:
        sys.stderr.write(_nothing_fits_text(str(query), reply["servers"], unserved) + "\n")
    elif hits and unserved:
        sys.stderr.write("search_tool_docs: no configured server provides %s: the hits can do only other parts of the request.\n" % ", ".join(unserved))
    elif hits and reply.get("weak") and reply.get("servers") is not None:
        sys.stderr.write(_weak_text(str(query), hits, reply["servers"]) + "\n")
    return hits


def _nothing_fits_text(query, servers, unserved=()):
    """What the model reads when a search finds nothing: no server does it (or provides the
    service it names), and which there are."""
    if not servers:
        return "search_tool_docs: nothing fits %r: no MCP server with tools is configured." % _short(query, 80)
    missing = ", ".join(unserved)
    why = "no configured server provides %s" % missing if missing else "no tool of the configured servers does this"
    return (
        "search_tool_docs: nothing fits %r: %s. The servers: %s. "
        "Other words will not find what no server offers: do it another way, or tell the user it is not available."
        % (_short(query, 80), why, _servers_text(servers))
    )


def _weak_text(query, hits, servers):
    """What the model reads when every hit scores low: they share words with the request and may
    not do it; if none does, no configured server does."""
    best = max(float(hit.get("score") or 0) for hit in hits)
    return (
        "search_tool_docs: only weak matches for %r (best score %.2f): check that a hit does this before calling it. "
        "If none does, no configured server does; the servers: %s."
        % (_short(query, 80), best, _servers_text(servers))
    )


def _servers_text(servers):
    """The configured servers in one line: name, tool count and what they do."""
    shown = []
    for server in servers[:_MAX_NAMES_SHOWN]:
        about = _short(" ".join(str(server.get("description") or "").split()), 60)
        shown.append("%s (%s tools%s)" % (server.get("name"), server.get("tools"), ": " + about if about else ""))
    more = len(servers) - len(shown)
    return "; ".join(shown) + ("; and %d more" % more if more > 0 else "")


def _shown_doc(doc):
    """A tool's dict as the code gets it: its signature rendered as help() shows it (from the
    params and return type the host sends, which are dropped)."""
    if not isinstance(doc, dict) or "params" not in doc:
        return doc
    params = doc.pop("params") or []
    returns = doc.pop("returnType", None)
    text = _signature_text("mcp_%s.%s" % (_alias_of(doc.get("server")), doc.get("alias")), params, returns)
    if text:
        doc["signature"] = text
    return doc


def _not_ready_text(server):
    state = server.get("state") or "unknown"
    error = server.get("error")
    if state == "error" and error:
        if len(error) > 160:
            error = error[:157] + "..."
        return "%s (error: %s)" % (server.get("server"), error)
    return "%s (%s)" % (server.get("server"), state)


async def query_tool_docs(server, tool=None, detail="summary"):
    """Docs of one tool, or of every tool of `server`: always a list of dicts with server,
    tool, alias, signature (as help() shows it: nested shapes, choices, defaults) and returns
    (what a call returns), and "hint" when the server marks the tool read-only or destructive.
    detail="full" adds description and inputSchema, and when the server gives them title,
    annotations (readOnlyHint, destructiveHint, idempotentHint, openWorldHint), outputSchema,
    icons and the tool's own _meta (the server's data, as it gave it)."""
    docs = await _host.request("query_tools", {"server": server, "tool": tool, "detail": detail})
    return [_shown_doc(doc) for doc in docs] if isinstance(docs, list) else docs


class SnippetError(Exception):
    """A snippet could not be loaded (missing, too large, a syntax error, no main) or its main
    raised; `.snippet` is its name and the original error is the cause."""

    def __init__(self, snippet, message):
        super().__init__("snippet %r: %s" % (snippet, message))
        self.snippet = snippet


def _shown_arguments(args, kwargs):
    """The arguments of a run_snippet call for the run log: short reprs, never the whole value."""
    import reprlib

    shorten = reprlib.Repr()
    shorten.maxstring = shorten.maxother = 60
    shorten.maxlist = shorten.maxtuple = shorten.maxdict = shorten.maxset = 6

    def one(value):
        try:
            return shorten.repr(value)
        except Exception:
            return "<%s>" % type(value).__name__

    parts = [one(a) for a in args] + ["%s=%s" % (str(k)[:40], one(v)) for k, v in list(kwargs.items())[:20]]
    return ", ".join(parts)[:1000]


async def run_snippet(name, /, *args, **kwargs):
    """Runs the saved snippet `name` (see search_tool_docs hits with kind "snippet"): its source
    comes from the host and runs in a fresh module of its own in this session; its main(**kwargs)
    (plain or async) is called with the arguments given, and its return value is returned.
    Errors name the snippet (SnippetError; a ToolError of a tool call inside it is raised as is)."""
    import asyncio
    import linecache

    name = str(name)
    try:
        reply = await _host.request("get_snippet", {"name": name, "arguments": _shown_arguments(args, kwargs)})
    except _host.HostError as error:
        raise SnippetError(name, str(error)) from None
    filename = "<snippet %s>" % name
    source = reply.get("source") or ""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType("snippet_%s" % name, None)
    module.__file__ = filename
    module.__dict__.update({n: globals()[n] for n in __all__})
    module.__dict__.update({info["alias"]: _proxies[info["name"]] for info in _SERVERS if info["name"] in _proxies})
    try:
        code = compile(source, filename, "exec")
        exec(code, module.__dict__)
    except SyntaxError as error:
        raise SnippetError(name, "syntax error on line %s: %s" % (error.lineno, error.msg)) from None
    except Exception as error:
        raise SnippetError(name, "loading it failed: %s: %s" % (type(error).__name__, error)) from error
    main = module.__dict__.get("main")
    if not callable(main):
        raise SnippetError(name, "it defines no main(**kwargs) function")
    try:
        result = main(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
    except ToolError as error:
        if hasattr(error, "add_note"):
            error.add_note("in snippet %r" % name)
        raise
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise
    except Exception as error:
        raise SnippetError(name, "%s: %s" % (type(error).__name__, error)) from error
    return result


def capability_summary():
    """What this sandbox offers, in a few lines."""
    lines = [
        "Proxied MCP servers (call: await mcp_<server>.<tool>(**kwargs) or await call_tool(server, tool, {...})):",
    ]
    for server in discovered_servers():
        count = server.get("tools")
        status = server.get("status")
        if status == "error":
            note = " [error: %s]" % (server.get("error") or "unknown")
        elif status == "starting":
            note = " [starting]"
        elif status in ("awaiting-consent", "declined"):
            note = " [%s: the user has not allowed it]" % status
        else:
            note = ""
        lines.append(
            "  %s  %s%s%s"
            % (
                server["alias"],
                server.get("description") or "",
                " (tools not known yet)" if count is None else " (%d tools)" % count,
                note,
            )
        )
    if len(lines) == 1:
        lines.append("  (none configured)")
    lines.append("Discover: await search_tool_docs('what you need') (hits with signature and score; [] when no server does it); help(mcp_<server>) lists a server's tools.")
    lines.append("Saved snippets (written by the user): search hits with kind \"snippet\"; source: await query_tool_docs(\"snippets\", tool=name, detail=\"full\"); run: await run_snippet(name, **kwargs).")
    lines.append("A tool's signature and what a call returns: await query_tool_docs(server, tool) (detail=\"full\" adds description and schema) or help(mcp_<server>.<tool>).")
    lines.append("Resources and prompts: await list_resources(server), await read_resource(server, uri) (also a resource_link a tool returned), await list_resource_templates(server), await list_prompts(server), await get_prompt(server, name, {arg: str}).")
    lines.append("Errors from tools raise ToolError (kind \"unavailable\" when the server could not start, \"needs-consent\" when the user has not allowed it, \"declined\" when the user refused a call that asks for confirmation).")
    facts = _packages_facts() or {}
    add = "the user adds packages with the setting sandbox.packages" if facts.get("canAdd", True) else "packages need the container sandbox (sandbox.packages)"
    lines.append("Python packages: %s No pip: %s." % (facts.get("installed") or "importlib.metadata.distributions() lists them.", add))
    # The container's way out (sandbox.network) is the proxy socket the host mounts; without it there is none.
    if os.path.exists("/run/cem-net/egress.sock"):
        network = "Network: HTTP and HTTPS only through the bridge's proxy (HTTPS_PROXY is set), to the hosts sandbox.network allows; others get a 403 that says what to set."
    else:
        network = "No network. %s" % _REACH_OUT
    lines.append("%s Files in /work and /tmp only. emit_image(png_bytes) shows an image; so do matplotlib figures (plt.show(), or left open at the end of a run)." % network)
    lines.append("Files written under /work/out come back with the result (small text inline, others attached; at most 20, 4 MB each), then the folder is emptied.")
    snapshot = _host.workspace_snapshot() if hasattr(_host, "workspace_snapshot") else None
    if snapshot:
        # A remote engine's copy: the model should know it is one, and how to take it again.
        lines.append("/workspace is a read-only copy of the user's files (%s); refresh_workspace() takes it again." % snapshot)
    elif os.path.ismount("/workspace"):
        lines.append("The user's files are at /workspace, read-only.")
    elif os.path.isdir("/workspace"):
        try:
            folders = sorted(os.listdir("/workspace"))
        except OSError:
            folders = []
        lines.append("The user's folders are at %s, read-only." % ", ".join("/workspace/" + name for name in folders))
    return "\n".join(lines)


class _Shape:
    """A type as the docs write it (`list[{name: str}]`), shown bare by help() and signatures."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


_MAX_SIGNATURE_CHARS = 400
_MAX_NAMES_SHOWN = 30
_RETURNS_CONTENT = "the tool's content: str for one text item, a dict for an image, audio or resource, a list of those for several"


def _signature(params, returns):
    parameters = []
    ordered = [p for p in params if p.get("required")] + [p for p in params if not p.get("required")]
    for param in ordered:
        if not param.get("identifier"):
            continue
        if param.get("required"):
            default = inspect.Parameter.empty
        else:
            default = param.get("default")
        annotation = _Shape(param.get("type", "Any"))
        parameters.append(inspect.Parameter(param["name"], inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
    return inspect.Signature(parameters, return_annotation=_Shape(returns or "str | dict | list[str | dict]"))


def _signature_text(qualname, params, returns):
    """`mcp_<server>.<tool>(*, ...) -> ...`: the one rendering of a signature the code reads,
    in search hits, docs and argument errors, as help() shows it; None if it cannot be made."""
    try:
        return "%s%s" % (qualname, _signature(params, returns))
    except (TypeError, ValueError):
        return None


def _closest(word, options):
    """The option nearest to `word` (case, "_" and "-" ignored), or None."""
    import difflib

    def norm(text):
        return str(text).lower().replace("_", "").replace("-", "")

    def words(text):
        return tuple(sorted(str(text).lower().replace("-", "_").split("_")))

    table = {}
    for option in options:
        table.setdefault(norm(option), option)
    if norm(word) in table:
        return table[norm(word)]
    # The same words in another order: read_file_text for read_text_file.
    same = [option for option in options if words(option) == words(word)]
    if same:
        return same[0]
    found = difflib.get_close_matches(norm(word), list(table), n=1, cutoff=0.6)
    return table[found[0]] if found else None


def _short(text, limit):
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Arguments:
    """Checks a call's arguments against the tool's schema before it is sent, so that a wrong
    keyword is named with the right one and the signature, not met as a server's validation
    error."""

    def __init__(self, name, doc):
        self.name = name  # mcp_<server>.<tool>
        self.params = [p for p in doc.get("params") or [] if isinstance(p, dict) and "name" in p]
        self.checked = not doc.get("otherKeys", True)
        shown = _signature_text(name, self.params, doc.get("returnType")) or doc.get("signature")
        self.signature = _short(shown or self.name + "(...)", _MAX_SIGNATURE_CHARS)

    def error(self, text):
        return TypeError("%s\nSignature: %s" % (text, self.signature))

    def of(self, args, kwargs):
        if args:
            if len(args) == 1 and isinstance(args[0], dict):
                kwargs = dict(args[0], **kwargs)
            else:
                raise self.positional(args)
        if not self.checked:
            return kwargs
        known = {p["name"]: p for p in self.params}
        unknown = [k for k in kwargs if k not in known]
        missing = [p["name"] for p in self.params if p.get("required") and p["name"] not in kwargs]
        if unknown:
            word = unknown[0]
            guess = _closest(word, [n for n in known if n not in kwargs])
            if guess is None and len(unknown) == 1 and len(missing) == 1:
                guess = missing[0]
            if not known:
                raise self.error("%s() takes no arguments, got %r" % (self.name, word))
            raise self.error(
                "%s() got an unexpected keyword argument %r%s"
                % (self.name, word, "; did you mean %r?" % guess if guess else "")
            )
        if missing:
            raise self.error(
                "%s() missing required keyword argument%s: %s"
                % (self.name, "" if len(missing) == 1 else "s", ", ".join(repr(m) for m in missing))
            )
        # The signature shows optional parameters as "= None": None means "not given".
        return {k: v for k, v in kwargs.items() if not (v is None and not known[k].get("required") and "None" not in known[k].get("type", ""))}

    def positional(self, args):
        ordered = [p for p in self.params if p.get("required")] + [p for p in self.params if not p.get("required")]
        names = [p["name"] for p in ordered if p.get("identifier")]
        pairs = ["%s=%s" % (n, _short(repr(v), 60)) for n, v in zip(names, args)]
        example = "await %s(%s)" % (self.name, ", ".join(pairs) if pairs and len(args) <= len(names) else "name=value, ...")
        return self.error("%s() takes keyword arguments only: write %s" % (self.name, example))


def _hint_words(annotations):
    """The tool's annotations in words: "read-only", "destructive", "idempotent", "open world"."""
    if not isinstance(annotations, dict):
        return ""
    words = []
    if annotations.get("readOnlyHint") is True:
        words.append("read-only")
    elif annotations.get("destructiveHint") is True:
        words.append("destructive")
    if annotations.get("idempotentHint") is True:
        words.append("idempotent")
    if annotations.get("openWorldHint") is True:
        words.append("open world")
    return ", ".join(words)


def _tool_function(server, doc):
    real_name = doc["tool"]
    qualname = "mcp_%s.%s" % (_alias_of(server), doc["alias"])
    arguments = _Arguments(qualname, doc)

    async def tool(*args, **kwargs):
        return await call_tool(server, real_name, arguments.of(args, kwargs))

    tool.__name__ = doc["alias"]
    tool.__qualname__ = qualname
    tool.__module__ = "mcp.runtime"
    params = doc.get("params") or []
    returns = doc.get("returns") or _RETURNS_CONTENT
    lines = [doc.get("description") or "(no description)", ""]
    if isinstance(doc.get("title"), str) and doc["title"]:
        lines.insert(0, _short(doc["title"], 120))
    if real_name != doc["alias"]:
        lines.append("Tool name on the server: %s" % real_name)
    hints = _hint_words(doc.get("annotations"))
    if hints:
        lines.append("Hints from the server: %s" % hints)
    described = [p for p in params if p.get("description") or "default" in p]
    if described:
        lines.append("Parameters:")
    for param in described:
        notes = [] if param.get("required") else ["optional"]
        if "default" in param:
            notes.append("default %s" % _short(repr(param["default"]), 40))
        lines.append(
            "  %s%s%s"
            % (param["name"], " (%s)" % ", ".join(notes) if notes else "", ": " + param["description"] if param.get("description") else "")
        )
    lines.append("Returns: %s" % returns)
    unnamed = [p["name"] for p in params if not p.get("identifier")]
    if unnamed:
        lines.append("Not Python names (pass them with call_tool(%r, %r, {...})): %s" % (server, real_name, ", ".join(unnamed)))
    if not doc.get("allowed", True):
        lines.append("Not allowed by the bridge's policy: calling it raises ToolError.")
    tool.__doc__ = "\n".join(lines).rstrip()
    try:
        tool.__signature__ = _signature(params, doc.get("returnType"))
    except (TypeError, ValueError):
        pass
    return tool


def _alias_of(server):
    for info in _SERVERS:
        if info["name"] == server:
            return info["alias"][4:] if info["alias"].startswith("mcp_") else info["alias"]
    return server


class _ServerProxy:
    """A proxied server: its tools are attributes, listed on first use."""

    def __init__(self, info):
        self.__dict__["_info"] = info
        self.__dict__["_tools"] = None

    def _load(self, force=False):
        if self._tools is None or force:
            docs = _host.request_sync("list_tools", {"server": self._info["name"]})
            tools = {}
            for doc in docs:
                function = _tool_function(self._info["name"], doc)
                tools[doc["alias"]] = function
                tools.setdefault(doc["tool"], function)
            self.__dict__["_tools"] = tools
        return self._tools

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            tools = self._load()
            if name not in tools:
                tools = self._load(force=True)
        except _host.HostError as error:
            raise _host_tool_error(self._info["name"], name, error) from None
        if name not in tools:
            aliases = sorted({f.__name__ for f in tools.values()})
            guess = _closest(name, aliases)
            shown = ", ".join(aliases[:_MAX_NAMES_SHOWN]) + (", ..." if len(aliases) > _MAX_NAMES_SHOWN else "")
            raise AttributeError(
                "server %r has no tool %r.%s Its tools: %s"
                % (self._info["name"], name, " Did you mean %r?" % guess if guess else "", shown or "none")
            )
        return tools[name]

    def _help_text(self):
        """What help(mcp_<server>) prints: the server and one signature per tool."""
        lines = ["%s: %s" % (self._info["alias"], self._info.get("description") or "an MCP server")]
        # The server's own instructions (from its start; its words, not the bridge's).
        said = next((s.get("instructions") for s in discovered_servers() if s.get("name") == self._info["name"]), None)
        if said:
            lines.append("The server says:")
            lines.extend("  " + line for line in said.splitlines())
        for function in sorted({id(f): f for f in self._load().values()}.values(), key=lambda f: f.__name__):
            lines.append("  async %s%s" % (function.__name__, _short(str(getattr(function, "__signature__", "(...)")), 300)))
        lines.append("Call: await %s.<tool>(**kwargs); one tool's docs: help(%s.<tool>)." % (self._info["alias"], self._info["alias"]))
        return "\n".join(lines)

    def __setattr__(self, name, value):
        raise AttributeError("MCP server proxies are read-only")

    def __dir__(self):
        try:
            return sorted({f.__name__ for f in self._load().values()})
        except _host.HostError:
            return []

    def __repr__(self):
        return "<MCP server %r (%s)>" % (self._info["name"], self._info.get("description") or "no description")


def help(*args, **kwargs):
    """help(mcp_<server>) lists a server's tools with their signatures; help(mcp_<server>.<tool>)
    shows one tool's; help() alone says what this sandbox offers. Anything else: Python's help."""
    if not args and not kwargs:
        print(capability_summary())
        return
    if len(args) == 1 and not kwargs and isinstance(args[0], _ServerProxy):
        try:
            print(args[0]._help_text())
        except _host.HostError as error:
            print("%r: its tools are not available: %s" % (args[0], error))
        return
    import builtins

    return builtins.help(*args, **kwargs)


_REACH_OUT = "Reach outside services through a proxied MCP server: discovered_servers(), await search_tool_docs(\"what you need\")."


def _packages_facts():
    """What the bridge says of the sandbox's packages: {"installed": the sentence the
    capabilities resource says too, "canAdd": whether sandbox.packages can add one}; None when
    it says nothing."""
    try:
        facts = _host.request_sync("sandbox_packages", {})
    except Exception:
        return None
    return facts if isinstance(facts, dict) and isinstance(facts.get("installed"), str) else None


def _module_error_hint(exc):
    """An import that found nothing, said with the bridge's account of what is installed and
    whether sandbox.packages can add it (the kernel words it: sandbox_host.module_hint)."""
    name = getattr(exc, "name", None)
    word = getattr(_host, "module_hint", None)
    if word is None or not isinstance(name, str):
        return None
    facts = _packages_facts()
    return word(name, facts["installed"], bool(facts.get("canAdd")), _REACH_OUT) if facts else None


def _error_hint(exc, kind, hint):
    """Hints the kernel cannot give: the server a mistyped mcp_ name meant, where the network
    is (a proxied server), and what is installed (the bridge's account)."""
    if kind == "network":
        return "%s %s" % (hint, _REACH_OUT)
    if kind == "module":
        return _module_error_hint(exc)
    if kind == "coroutine":
        return "That value is a coroutine: an async call was not awaited. Tool calls are async: write result = await mcp_<server>.<tool>(...)"
    if isinstance(exc, NameError) and not isinstance(exc, UnboundLocalError):
        name = getattr(exc, "name", None)
        if not isinstance(name, str):
            import re

            found = re.match(r"name '([^']+)' is not defined", str(exc))
            name = found.group(1) if found else None
        if name and name.startswith("mcp_"):
            aliases = [info["alias"] for info in _SERVERS]
            if not aliases:
                return "No MCP servers are proxied here."
            guess = _closest(name, aliases)
            shown = ", ".join(aliases[:_MAX_NAMES_SHOWN]) + (", ..." if len(aliases) > _MAX_NAMES_SHOWN else "")
            return "%sThe proxied servers: %s." % ("Did you mean %s? " % guess if guess else "", shown)
    return None


def _install(servers, namespace):
    _SERVERS[:] = servers
    runtime = sys.modules[__name__] if __name__ in sys.modules else None
    package = types.ModuleType("mcp", "The proxied MCP servers of Code Execution Mode.")
    package.runtime = runtime
    sys.modules["mcp"] = package
    exported = {name: globals()[name] for name in __all__}
    namespace.update(exported)
    namespace["help"] = help
    if hasattr(_host, "add_error_hint"):
        _host.add_error_hint(_error_hint)
        _host.hide_frames("<mcp.runtime>")  # the prelude compiles this module under that name
    _add_proxies(servers, namespace, runtime)


def _add_proxies(servers, namespace, runtime):
    for info in servers:
        proxy = _ServerProxy(info)
        _proxies[info["name"]] = proxy
        namespace[info["alias"]] = proxy
        if runtime is not None:
            setattr(runtime, info["alias"], proxy)


def _update_servers(servers, namespace):
    """The bridge's server list changed while this interpreter lived (a settings change): the
    session keeps its variables, removed servers lose their mcp_<alias> object, and every
    server gets a fresh one (a changed server's tools are listed anew on first use)."""
    runtime = sys.modules.get(__name__)
    for info in _SERVERS:
        old = _proxies.pop(info["name"], None)
        if old is None:
            continue
        # Only the names this module set: a variable the code bound to that name is left alone.
        if namespace.get(info["alias"]) is old:
            del namespace[info["alias"]]
        if runtime is not None and getattr(runtime, info["alias"], None) is old:
            delattr(runtime, info["alias"])
    _SERVERS[:] = servers
    _add_proxies(servers, namespace, runtime)
