# The MCP runtime inside the sandbox: the module `mcp.runtime`, loaded once per interpreter.
# It gives sandboxed code the proxied servers as objects (`mcp_<server>.<tool>(**kwargs)`),
# call_tool(), discovery and search. Every call goes through the host, which applies policy.
# Python 3.9+.
import inspect
import json
import sys
import types

import sandbox_host as _host

__all__ = [
    "ToolError",
    "call_tool",
    "discovered_servers",
    "search_tool_docs",
    "query_tool_docs",
    "capability_summary",
]

_SERVERS = []  # filled by _install: [{"name": ..., "alias": ..., "description": ...}]
_proxies = {}


class ToolError(Exception):
    """A tool call failed: the tool reported an error (kind "tool-error"), or the bridge refused
    or could not make the call ("denied", "unknown-server", "unknown-tool", "unavailable",
    "too-large" for arguments or a result over the bridge's size limits, or "needs-consent" for
    a server the workspace defines and the user has not allowed yet)."""

    def __init__(self, server, tool, message, kind="tool-error"):
        super().__init__("%s.%s: %s" % (server, tool, message))
        self.server = server
        self.tool = tool
        self.kind = kind


_KINDS = {
    "ToolDeniedError": "denied",
    "UnknownServerError": "unknown-server",
    "UnknownToolError": "unknown-tool",
    "ServerUnavailableError": "unavailable",
    "ProxyLimitError": "too-large",
    "ConsentNeededError": "needs-consent",
}


async def call_tool(server, tool, args=None, **kwargs):
    """Calls `tool` of `server` with the arguments in `args` (a dict) and/or keywords.
    Returns the tool's structured content when it has one, else its text (a list when there
    are several content items). Raises ToolError when the tool reports an error."""
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise TypeError("call_tool(server, tool, args): args must be a dict, not %s" % type(args).__name__)
    arguments = dict(args)
    arguments.update(kwargs)
    try:
        reply = await _host.request("call_tool", {"server": server, "tool": tool, "arguments": arguments})
    except _host.HostError as error:
        raise ToolError(server, tool, str(error), _KINDS.get(error.type, "failed")) from None
    if reply.get("isError"):
        raise ToolError(server, tool, reply.get("errorText") or "the tool reported an error")
    return reply.get("value")


def discovered_servers():
    """One dict per enabled server: name, alias, description, tools (count, when known), status
    ("not-started", "starting", "running", "error", or "awaiting-consent" / "declined" for a
    server the workspace defines and the user has not allowed) and, for those, the reason;
    "warning" says what of its tool list was left out by the bridge's limits. Servers whose tools
    are not known yet are started; this waits for them only briefly."""
    return _host.request_sync("list_servers", {})


async def search_tool_docs(query, limit=5, detail="summary"):
    """Ranked search over every enabled server's tools, best first. Each hit has server, tool,
    alias and description; detail="full" adds signature and inputSchema. Servers whose tools
    are not known yet (still starting, or failed) are named in one line on stderr."""
    reply = await _host.request("search_tools", {"query": str(query), "limit": int(limit), "detail": detail})
    if isinstance(reply, list):
        return reply
    not_ready = reply.get("notReady") or []
    if not_ready:
        sys.stderr.write("search_tool_docs: not searched yet: %s\n" % ", ".join(_not_ready_text(s) for s in not_ready))
    return reply.get("hits") or []


def _not_ready_text(server):
    state = server.get("state") or "unknown"
    error = server.get("error")
    if state == "error" and error:
        if len(error) > 160:
            error = error[:157] + "..."
        return "%s (error: %s)" % (server.get("server"), error)
    return "%s (%s)" % (server.get("server"), state)


async def query_tool_docs(server, tool=None, detail="summary"):
    """Docs of one tool, or of every tool of `server`: always a list of the same dicts."""
    return await _host.request("query_tools", {"server": server, "tool": tool, "detail": detail})


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
    lines.append("Discover: await search_tool_docs('what you need'), await query_tool_docs(server), help(mcp_<server>.<tool>).")
    lines.append("Errors from tools raise ToolError (kind \"unavailable\" when the server could not start, \"needs-consent\" when the user has not allowed it). No network; files in /work and /tmp only.")
    return "\n".join(lines)


def _signature(params):
    parameters = []
    ordered = [p for p in params if p.get("required")] + [p for p in params if not p.get("required")]
    for param in ordered:
        if not param.get("identifier"):
            continue
        default = inspect.Parameter.empty if param.get("required") else None
        parameters.append(
            inspect.Parameter(param["name"], inspect.Parameter.KEYWORD_ONLY, default=default, annotation=param.get("type", "Any"))
        )
    return inspect.Signature(parameters)


def _tool_function(server, doc):
    real_name = doc["tool"]

    async def tool(*args, **kwargs):
        if args:
            if len(args) > 1 or not isinstance(args[0], dict):
                raise TypeError("%s() takes keyword arguments (or one dict of arguments)" % doc["alias"])
            kwargs = dict(args[0], **kwargs)
        return await call_tool(server, real_name, kwargs)

    tool.__name__ = doc["alias"]
    tool.__qualname__ = "mcp_%s.%s" % (_alias_of(server), doc["alias"])
    tool.__module__ = "mcp.runtime"
    params = doc.get("params") or []
    lines = [doc.get("description") or "(no description)", ""]
    if real_name != doc["alias"]:
        lines.append("Tool name on the server: %s" % real_name)
    for param in params:
        lines.append(
            "  %s: %s%s%s"
            % (param["name"], param.get("type", "Any"), "" if param.get("required") else " (optional)", " - " + param["description"] if param.get("description") else "")
        )
    if not doc.get("allowed", True):
        lines.append("Not allowed by the bridge's policy: calling it raises ToolError.")
    tool.__doc__ = "\n".join(lines).rstrip()
    try:
        tool.__signature__ = _signature(params)
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
            raise ToolError(self._info["name"], name, str(error), _KINDS.get(error.type, "failed")) from None
        if name not in tools:
            aliases = sorted({f.__name__ for f in tools.values()})
            raise AttributeError("server %r has no tool %r; its tools: %s" % (self._info["name"], name, ", ".join(aliases) or "none"))
        return tools[name]

    def __setattr__(self, name, value):
        raise AttributeError("MCP server proxies are read-only")

    def __dir__(self):
        try:
            return sorted({f.__name__ for f in self._load().values()})
        except _host.HostError:
            return []

    def __repr__(self):
        return "<MCP server %r (%s)>" % (self._info["name"], self._info.get("description") or "no description")


def _install(servers, namespace):
    _SERVERS[:] = servers
    runtime = sys.modules[__name__] if __name__ in sys.modules else None
    package = types.ModuleType("mcp", "The proxied MCP servers of Code Execution Mode.")
    package.runtime = runtime
    sys.modules["mcp"] = package
    exported = {name: globals()[name] for name in __all__}
    namespace.update(exported)
    for info in servers:
        proxy = _ServerProxy(info)
        _proxies[info["name"]] = proxy
        namespace[info["alias"]] = proxy
        setattr(runtime, info["alias"], proxy)
