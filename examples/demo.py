# The main job: Python in the sandbox discovers and calls a real proxied MCP server
# (@modelcontextprotocol/server-memory), composing several calls in one run.
import asyncio, os, sys

if sys.platform == "emscripten":
    print("sandbox: WebAssembly | environment", sorted(os.environ))
else:
    import socket
    print("sandbox: uid", os.getuid(), "| interfaces", [n for _, n in socket.if_nameindex()])
print(capability_summary())

hits = await search_tool_docs("remember facts about people", limit=3)
print("search:", [(h["server"], h["tool"]) for h in hits])

await mcp_memory.create_entities(entities=[
    {"name": "Ada Lovelace", "entityType": "person", "observations": ["wrote the first program"]},
    {"name": "Analytical Engine", "entityType": "machine", "observations": ["designed by Babbage"]},
])
await mcp_memory.create_relations(relations=[
    {"from": "Ada Lovelace", "to": "Analytical Engine", "relationType": "programmed"},
])
graph, found = await asyncio.gather(mcp_memory.read_graph(), mcp_memory.search_nodes(query="program"))
print("entities:", sorted(e["name"] for e in graph["entities"]))
print("relations:", [(r["from"], r["relationType"], r["to"]) for r in graph["relations"]])
[e["name"] for e in found["entities"]]
