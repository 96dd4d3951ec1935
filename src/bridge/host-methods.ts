// The methods sandboxed code may ask of the host, each with zod-checked parameters: tool calls
// through the hub's policy, and discovery (servers, tool docs, search) from the catalog.
// Waiting for a server to start is not charged to the run's time limit; search and discovery
// never wait long for servers that are not ready.
import { z } from 'zod';
import type { RequestContext, RequestHandler } from '../sandbox/session.ts';
import type { ToolEntry } from './catalog/catalog.ts';
import { takesOtherKeys } from './catalog/signature.ts';
import type { ProxyHub } from './hub/hub.ts';
import type { RunLog } from './run-log.ts';
import { toSandboxResult, type ResultImage } from './tool-results.ts';

const detail = z.enum(['summary', 'full']).default('summary');
const name = z.string().min(1).max(256);

const schemas = {
  call_tool: z.object({ server: name, tool: name, arguments: z.record(z.string(), z.unknown()).default({}) }),
  list_servers: z.object({}).default({}),
  list_tools: z.object({ server: name }),
  search_tools: z.object({ query: z.string().max(2000), limit: z.number().int().min(1).max(100).default(5), detail }),
  query_tools: z.object({ server: name, tool: name.nullable().optional(), detail }),
};

export type HostMethod = keyof typeof schemas;

export function toolDoc(entry: ToolEntry, level: 'summary' | 'full'): Record<string, unknown> {
  const doc: Record<string, unknown> = {
    server: entry.server,
    tool: entry.tool,
    alias: entry.alias,
    description: entry.description,
  };
  if (level === 'full') {
    doc.signature = `mcp_${entry.serverAlias}.${entry.signature}`;
    doc.returns = entry.returns ?? RETURNS_TEXT;
    doc.inputSchema = entry.inputSchema;
  }
  return doc;
}

/** What a call of a tool without an outputSchema returns (see tool-results.ts). */
export const RETURNS_TEXT = "str: the tool's text (a list if it sends several items)";

/** Tool names shown per server by discovered_servers(); the rest are counted. */
export const MAX_LISTED_TOOL_NAMES = 60;

function toolNamesOf(tools: readonly ToolEntry[]): string[] {
  const names = tools.slice(0, MAX_LISTED_TOOL_NAMES).map((t) => t.alias);
  if (tools.length > names.length) names.push(`... ${tools.length - names.length} more: search_tool_docs()`);
  return names;
}

/** What is kept of a run's tool images to recognise a returned one: by count and by base64 size. */
const MAX_TOOL_IMAGES_PER_RUN = 64;
const MAX_TOOL_IMAGE_CHARS_PER_RUN = 48 * 1024 * 1024;

export interface HostMethods {
  handle: RequestHandler;
  /** Tool calls a run has made so far (its count is dropped once read after the run). */
  toolCallsOf(runId: string): number;
  /** Images the run's tool calls returned (not attached by themselves: see format.ts). */
  toolImagesOf(runId: string): ResultImage[];
  forget(runId: string): void;
}

export function createHostMethods(hub: ProxyHub, runLog: RunLog | undefined): HostMethods {
  const calls = new Map<string, number>();
  const images = new Map<string, { list: ResultImage[]; chars: number }>();
  const keepImages = (runId: string, found: ResultImage[]) => {
    // A call that ends after its run was forgotten keeps nothing (nobody would forget it again).
    if (found.length === 0 || !calls.has(runId)) return;
    let kept = images.get(runId);
    if (!kept) images.set(runId, (kept = { list: [], chars: 0 }));
    for (const image of found) {
      if (kept.list.length >= MAX_TOOL_IMAGES_PER_RUN || kept.chars + image.data.length > MAX_TOOL_IMAGE_CHARS_PER_RUN) return;
      if (kept.list.some((k) => k.data === image.data)) continue;
      kept.list.push(image);
      kept.chars += image.data.length;
    }
  };
  const handlers: { [M in HostMethod]: (params: z.infer<(typeof schemas)[M]>, context: RequestContext) => Promise<unknown> } = {
    async call_tool(params, context) {
      context.describe(`${params.server}.${params.tool}`);
      const started = performance.now();
      calls.set(context.runId, (calls.get(context.runId) ?? 0) + 1);
      const record = { run: context.runId, server: params.server, tool: params.tool, arguments: params.arguments };
      try {
        const { server, tool, result } = await hub.callTool(params.server, params.tool, params.arguments, context.signal, { untimed: context.untimed });
        const { images: found, ...converted } = toSandboxResult(result);
        keepImages(context.runId, found);
        runLog?.toolCall({ ...record, server, tool, outcome: converted.isError ? 'tool-error' : 'ok', durationMs: performance.now() - started, ...(converted.errorText ? { error: converted.errorText } : {}) });
        return converted;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        const refused = error instanceof Error && (error.name === 'ToolDeniedError' || error.name === 'ConsentNeededError');
        const outcome = refused ? 'denied' : 'failed';
        runLog?.toolCall({ ...record, outcome, durationMs: performance.now() - started, error: message });
        throw error;
      }
    },
    async list_servers(_params, context) {
      context.describe('discovered_servers()');
      await hub.discover();
      return hub.catalog.records().map((r) => {
        const common = { name: r.name, alias: `mcp_${r.alias}`, description: r.description ?? '' };
        // A server awaiting consent shows no tools (not even cached ones) and says why.
        const consent = hub.consentState(r.name);
        if (consent !== 'allowed') return { ...common, tools: null, status: consent, error: hub.consentReason(r.name) };
        // Tools known from the cache count even while the server is not started.
        return {
          ...common,
          tools: r.tools ? r.tools.length : null,
          toolNames: r.tools ? toolNamesOf(r.tools) : null,
          status: r.state,
          ...(r.error ? { error: r.error } : {}),
          ...(r.warning ? { warning: r.warning } : {}),
        };
      });
    },
    async list_tools(params, context) {
      context.describe(`the tools of ${params.server}`);
      const tools = await hub.listTools(params.server, { signal: context.signal, untimed: context.untimed });
      // For the sandbox's tool functions: `returnType` annotates their signature; `otherKeys`:
      // the schema takes keys it does not list, so the sandbox does not check keyword names.
      return tools.map((t) => ({
        ...toolDoc(t, 'full'),
        params: t.params,
        returnType: t.returns ?? 'str',
        otherKeys: takesOtherKeys(t.inputSchema),
        allowed: hub.allowed(t.server, t.tool),
      }));
    },
    async search_tools(params, context) {
      context.describe('search_tool_docs()');
      const notReady = await hub.discover();
      return { hits: hub.search(params.query, params.limit).map((t) => toolDoc(t, params.detail)), notReady };
    },
    async query_tools(params, context) {
      context.describe(`the tool docs of ${params.server}`);
      const tools = await hub.listTools(params.server, { signal: context.signal, untimed: context.untimed });
      const wanted = params.tool ? tools.filter((t) => t.tool === params.tool || t.alias === params.tool) : tools;
      if (params.tool && wanted.length === 0) throw new Error(`server "${params.server}" has no tool "${params.tool}"`);
      return wanted.map((t) => toolDoc(t, params.detail));
    },
  };

  const handle: RequestHandler = async (method, params, context) => {
    if (!Object.hasOwn(schemas, method)) throw new Error(`unknown host method "${method}"`);
    const key = method as HostMethod;
    const parsed = schemas[key].safeParse(params ?? {});
    if (!parsed.success) {
      throw new Error(`bad parameters for ${method}: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'params'}: ${i.message}`).join('; ')}`);
    }
    return (handlers[key] as (p: unknown, c: RequestContext) => Promise<unknown>)(parsed.data, context);
  };
  return {
    handle,
    toolCallsOf: (runId) => calls.get(runId) ?? 0,
    toolImagesOf: (runId) => images.get(runId)?.list ?? [],
    forget: (runId) => {
      calls.delete(runId);
      images.delete(runId);
    },
  };
}
