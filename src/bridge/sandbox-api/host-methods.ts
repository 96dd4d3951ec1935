// The methods sandboxed code may ask of the host, each with zod-checked parameters: tool calls
// through the hub's policy, and discovery (servers, tool docs, search) from the catalog.
// Waiting for a server to start is not charged to the run's time limit; search and discovery
// never wait long for servers that are not ready.
import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { RefusedRequest, RequestContext, RequestHandler } from '../../sandbox/index.ts';
import type { ToolEntry } from '../catalog/catalog.ts';
import { WEAK_SCORE } from '../catalog/ranking.ts';
import { returnsText, takesOtherKeys } from '../catalog/signature.ts';
import { toolHint } from '../catalog/tool-hints.ts';
import type { NotReady, ProxyHub } from '../proxy/hub.ts';
import { ServerUnavailableError } from '../proxy/server-errors.ts';
import { getPrompt, listAll, readResource, type Listing } from './resources.ts';
import type { ConfirmationGate } from '../client/confirmations.ts';
import type { RunLog } from '../../state/run-log/writer.ts';
import { SNIPPET_NAME, SNIPPETS_SERVER, snippetDoc, snippetHash, type SnippetStore } from '../../state/snippets.ts';
import { toSandboxResult, type ResultImage } from '../results/tool-results.ts';
import { listingText, type ToolUsage } from '../results/meter.ts';
import { jsonBytes } from '../proxy/limits.ts';
import { estimateTokens } from '../../shared/token-estimate.ts';
import { kindOf, outcomeOfKind } from '../../shared/error-kinds.ts';
import { describeIssues } from '../../config/load.ts';
import type { RunCall } from '../run-call.ts';
import type { PackagesFacts } from '../tool/packages-status.ts';

const detail = z.enum(['summary', 'full']).default('summary');
const name = z.string().min(1).max(256);

const schemas = {
  call_tool: z.object({
    server: name,
    tool: name,
    arguments: z.record(z.string(), z.unknown()).default({}),
    raw: z.boolean().default(false),
  }),
  list_servers: z.object({}).default({}),
  sandbox_packages: z.object({}).default({}),
  list_tools: z.object({ server: name }),
  search_tools: z.object({ query: z.string().max(2000), limit: z.number().int().min(1).max(100).default(5), detail }),
  query_tools: z.object({ server: name, tool: name.nullable().optional(), detail }),
  // `arguments`: the call's arguments as the sandbox shows them (a shortened repr), for the run log only.
  get_snippet: z.object({
    name: z.string().regex(SNIPPET_NAME, 'must be a snippet name (letters, digits and _)'),
    arguments: z.string().max(4000).optional(),
  }),
  list_resources: z.object({ server: name }),
  list_resource_templates: z.object({ server: name }),
  read_resource: z.object({ server: name, uri: z.string().min(1).max(8192) }),
  list_prompts: z.object({ server: name }),
  get_prompt: z.object({ server: name, name, arguments: z.record(z.string(), z.string()).default({}) }),
};

export type HostMethod = keyof typeof schemas;

/**
 * A tool's dict for sandboxed code. A search hit (`purpose` "search") says what the tool does
 * and how to call it: description and signature, with its score; the docs of one tool
 * (`purpose` "docs") how to call it and what it returns, the description being what the search
 * already showed. `detail` "full" adds the rest: description, returns, inputSchema, and title,
 * annotations, outputSchema, icons and the tool's own `_meta` when the server gives them.
 * `params` and `returnType` are for the sandbox, which renders the signature from them as help()
 * does (mcp_runtime.py).
 */
export function toolDoc(entry: ToolEntry, level: 'summary' | 'full', purpose: 'search' | 'docs' = 'search'): Record<string, unknown> {
  const doc: Record<string, unknown> = {
    server: entry.server,
    tool: entry.tool,
    alias: entry.alias,
  };
  if (purpose === 'search' || level === 'full') doc.description = entry.description;
  // A short mark from the tool's annotations, so that a hit says at once whether it changes things.
  const hint = toolHint(entry.annotations);
  if (hint) doc.hint = hint;
  doc.signature = `mcp_${entry.serverAlias}.${entry.signature}`;
  if (purpose === 'docs' || level === 'full') doc.returns = returnsText(entry.returns, entry.seen);
  doc.params = entry.params;
  doc.returnType = entry.returnType;
  if (level === 'full') {
    doc.inputSchema = entry.inputSchema;
    if (entry.title !== undefined) doc.title = entry.title;
    if (entry.annotations !== undefined) doc.annotations = entry.annotations;
    if (entry.outputSchema !== undefined) doc.outputSchema = entry.outputSchema;
    if (entry.icons !== undefined) doc.icons = entry.icons;
    if (entry._meta !== undefined) doc._meta = entry._meta;
  }
  return doc;
}

/** A score as hits show it: two decimals. */
const shownScore = (score: number): number => Math.round(score * 100) / 100;

/** Tool names shown per server by discovered_servers(); the rest are counted. */
export const MAX_LISTED_TOOL_NAMES = 60;

function toolNamesOf(tools: readonly ToolEntry[]): string[] {
  const names = tools.slice(0, MAX_LISTED_TOOL_NAMES).map((t) => t.alias);
  if (tools.length > names.length) names.push(`... ${tools.length - names.length} more: search_tool_docs()`);
  return names;
}

/** What is kept of a run's tool images to recognise a returned one: by count and by base64 size. */
export const MAX_TOOL_IMAGES_PER_RUN = 64;
const MAX_TOOL_IMAGE_CHARS_PER_RUN = 48 * 1024 * 1024;

export interface HostMethods {
  /** Serves requests that belong to no run's result (a prelude's): what they return is kept nowhere. */
  handle: RequestHandler;
  /** A handler of one run's own: what its requests leave stays with it, nothing is kept by run id. */
  forRun(): RunRequests;
}

/** One run's requests: the handler to run them with, and what they left for the run's result. */
export interface RunRequests {
  handle: RequestHandler;
  /** Tool calls made so far. */
  toolCalls(): number;
  /** Images the tool calls returned (not attached by themselves: see results/format.ts). */
  toolImages(): ResultImage[];
  /** Relays the progress of the run's proxied tool calls to `sink` until the returned function is called. */
  watchProgress(sink: ToolProgressSink): () => void;
  /** What the tool calls so far handed the code, and the tools they called (for the token meter). */
  usage(): ToolUsage;
}

/** What one run's requests leave behind; `keep` false for requests of no run's result. */
interface RunScope {
  keep: boolean;
  calls: number;
  images: ResultImage[];
  imageChars: number;
  progress: ToolProgressSink | undefined;
  /** Bytes of tool results handed to the code, and each tool called with its listing's tokens. */
  resultBytes: number;
  listings: Map<string, number>;
}

const newScope = (keep: boolean): RunScope => ({
  keep,
  calls: 0,
  images: [],
  imageChars: 0,
  progress: undefined,
  resultBytes: 0,
  listings: new Map(),
});

/** Where a run's proxied tool calls' progress goes. */
export type ToolProgressSink = (server: string, tool: string, progress: Progress) => void;

/** What a refused request is recorded by: the server and tool it named, if it named them well. */
const refusedShape = z.object({
  server: name.optional(),
  tool: name.nullable().optional(),
  name: name.optional(),
  arguments: z.unknown().optional(),
});

/**
 * A request the sandbox made after its run had ended, refused unserved (sandbox/sessions/run-requests.ts refuseRequest):
 * on record in the run log as a denied call, under the host's run and with the reason.
 */
export function recordRefusedRequest(runLog: RunLog | undefined, refused: RefusedRequest): void {
  const parsed = refusedShape.safeParse(refused.params);
  const params = parsed.success ? parsed.data : {};
  runLog?.toolCall({
    run: refused.run,
    server: params.server ?? '(bridge)',
    tool: params.tool ?? params.name ?? refused.method,
    arguments: params.arguments ?? {},
    outcome: 'denied',
    durationMs: 0,
    error: refused.reason,
  });
}

/** How a refused or failed proxied request is recorded in the run log. */
export function outcomeOf(error: unknown): 'declined' | 'denied' | 'failed' {
  return outcomeOfKind(kindOf(error));
}

/** The servers a search looked through, with what they do: what the model is told when nothing fits. */
function serversSearched(hub: ProxyHub): Array<{ name: string; description?: string; tools: number }> {
  return hub.catalog
    .records()
    .filter((r) => r.tools && hub.consentState(r.name) === 'allowed')
    .map((r) => ({ name: r.name, ...(r.description ? { description: r.description } : {}), tools: r.tools!.length }));
}

/** No hits while servers are still starting: say who, rather than answer an empty list. */
function refuseWhileStarting(notReady: NotReady[], waitedMs: number): void {
  const starting = notReady.filter((n) => n.state === 'starting' || n.state === 'not-started').map((n) => n.server);
  if (starting.length === 0) return;
  throw new ServerUnavailableError(
    `search_tool_docs found nothing in the servers ready so far; still starting after ${waitedMs / 1000} s: ${starting.join(', ')}. ` +
      'Search again in a moment, or see discovered_servers() for their state.',
  );
}

export function createHostMethods(
  hub: ProxyHub,
  runLog: RunLog | undefined,
  snippets?: SnippetStore,
  confirmations?: ConfirmationGate,
  /** What the code is told of its Python packages (capability_summary(), import errors). */
  packages?: () => PackagesFacts,
): HostMethods {
  // The token meter's part: what the code received, and what listing the tool directly would cost.
  const meter = (scope: RunScope, server: string, tool: string, received: unknown) => {
    if (!scope.keep) return;
    scope.resultBytes += jsonBytes(received);
    const key = JSON.stringify([server, tool]);
    if (scope.listings.has(key)) return;
    const entry = hub.catalog.findTool(server, tool);
    if (entry) scope.listings.set(key, estimateTokens(listingText(entry)));
  };
  const keepImages = (scope: RunScope, found: ResultImage[]) => {
    if (!scope.keep) return;
    for (const image of found) {
      if (scope.images.length >= MAX_TOOL_IMAGES_PER_RUN || scope.imageChars + image.data.length > MAX_TOOL_IMAGE_CHARS_PER_RUN) return;
      if (scope.images.some((k) => k.data === image.data)) continue;
      scope.images.push(image);
      scope.imageChars += image.data.length;
    }
  };
  const handlers: {
    [M in HostMethod]: (params: z.infer<(typeof schemas)[M]>, context: RequestContext, scope: RunScope) => Promise<unknown>;
  } = {
    async call_tool(params, context, scope) {
      context.describe(`${params.server}.${params.tool}`);
      const started = performance.now();
      scope.calls++;
      const record = { run: context.runId, server: params.server, tool: params.tool, arguments: params.arguments };
      try {
        const { server, tool, result } = await hub.callTool(params.server, params.tool, params.arguments, context.signal, {
          run: context,
          // A progress token goes upstream with every call; what comes back is relayed to the run's client.
          progress: (progress) => scope.progress?.(params.server, params.tool, progress),
          // A call that needs the user's confirmation asks (off the run's clock); without a gate it is refused.
          ...(confirmations ? { confirm: (request) => confirmations.confirm(request, context) } : {}),
        });
        const { images: found, ...converted } = toSandboxResult(result, params.raw);
        keepImages(scope, found);
        // What its calls return, for its signature: one text item each time, or other content.
        let returnType: string | undefined;
        if (!result.isError && (result.structuredContent === undefined || result.structuredContent === null)) {
          const content = Array.isArray(result.content) ? result.content : [];
          returnType = hub.catalog.noteResult(server, tool, content.length === 1 && content[0]!.type === 'text');
        }
        meter(scope, server, tool, converted);
        runLog?.toolCall({
          ...record,
          server,
          tool,
          outcome: converted.isError ? 'tool-error' : 'ok',
          durationMs: performance.now() - started,
          ...(converted.errorText ? { error: converted.errorText } : {}),
        });
        // A changed return type goes back with the result, for the tool function's signature in help().
        return returnType
          ? { ...converted, returnType, returns: returnsText(undefined, returnType === 'str' ? 'text' : 'content') }
          : converted;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        runLog?.toolCall({ ...record, outcome: outcomeOf(error), durationMs: performance.now() - started, error: message });
        throw error;
      }
    },
    async list_servers(_params, context) {
      context.describe('discovered_servers()');
      // Waiting for servers to start is not the code's doing: off the run's clock.
      await context.untimed(hub.discover());
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
          ...(r.instructions ? { instructions: r.instructions } : {}),
          ...(r.error ? { error: r.error } : {}),
          ...(r.warning ? { warning: r.warning } : {}),
        };
      });
    },
    // capability_summary() and the hint of an import that failed: the sentence the capabilities resource says too.
    sandbox_packages(_params, context) {
      context.describe("the sandbox's packages");
      return Promise.resolve(packages?.() ?? null);
    },
    async list_tools(params, context) {
      context.describe(`the tools of ${params.server}`);
      const tools = await hub.listTools(params.server, context);
      // For the sandbox's tool functions: `returnType` annotates their signature; `otherKeys`:
      // the schema takes keys it does not list, so the sandbox does not check keyword names.
      // Without the tools' own _meta: the functions have no use for it (query_tool_docs gives it).
      return tools.map((t) => ({
        ...toolDoc({ ...t, _meta: undefined }, 'full', 'docs'),
        otherKeys: takesOtherKeys(t.inputSchema),
        allowed: hub.allowed(t.server, t.tool),
      }));
    },
    async search_tools(params, context) {
      context.describe('search_tool_docs()');
      const notReady = await context.untimed(hub.discover());
      // Nothing when no tool answers the request (the best hit under the score threshold).
      const tools = hub.find(params.query, params.limit).map((h) => ({ ...toolDoc(h.entry, params.detail), score: shownScore(h.score) }));
      // Snippets that match come first (at most half of the hits, at least one), then tools.
      const found = snippets ? await snippets.find(params.query, Math.max(1, Math.floor(params.limit / 2))) : [];
      const snippetHits = await Promise.all(
        found.map(async ({ snippet: s, score }) => ({
          ...snippetDoc(params.detail === 'full' ? await snippets!.get(s.name).catch(() => s) : s, params.detail),
          score: shownScore(score),
        })),
      );
      const hits = [...snippetHits, ...tools].slice(0, params.limit);
      // A well-known service the request names that no server provides ("Google Drive"): said by name.
      const unserved = hub.catalog.unserved(params.query);
      const named = unserved.length > 0 ? { unserved } : {};
      // An empty answer must mean "nothing fits", never "not started yet".
      if (hits.length === 0) {
        refuseWhileStarting(notReady, hub.discoveryWaitMs);
        return { hits, notReady, servers: serversSearched(hub), ...named };
      }
      // Only weak hits: they share words with the request and may not do it; the model is told
      // so, with the servers, so that it can stop looking.
      if (Math.max(...hits.map((h) => h.score)) < WEAK_SCORE) {
        return { hits, notReady, weak: true, servers: serversSearched(hub), ...named };
      }
      return { hits, notReady, ...named };
    },
    async query_tools(params, context) {
      context.describe(`the tool docs of ${params.server}`);
      if (params.server === SNIPPETS_SERVER && snippets && !hub.catalog.names().includes(SNIPPETS_SERVER)) {
        if (params.tool) return [snippetDoc(await snippets.get(params.tool), params.detail)];
        return (await snippets.list()).map((s) => snippetDoc(s, params.detail));
      }
      const tools = await hub.listTools(params.server, context);
      const wanted = params.tool ? tools.filter((t) => t.tool === params.tool || t.alias === params.tool) : tools;
      if (params.tool && wanted.length === 0) throw new Error(`server "${params.server}" has no tool "${params.tool}"`);
      return wanted.map((t) => toolDoc(t, params.detail, 'docs'));
    },
    async get_snippet(params, context) {
      context.describe(`snippet ${params.name}`);
      if (!snippets) throw new Error('snippets are not available in this bridge');
      const snippet = await snippets.get(params.name);
      runLog?.snippetUsed({
        run: context.runId,
        name: snippet.name,
        origin: snippet.origin,
        sha256: snippetHash(snippet.source),
        ...(params.arguments !== undefined ? { arguments: params.arguments } : {}),
      });
      return { name: snippet.name, source: snippet.source, path: snippet.path, origin: snippet.origin };
    },
    async list_resources(params, context) {
      return listing(params.server, 'resources', context);
    },
    async list_resource_templates(params, context) {
      return listing(params.server, 'resourceTemplates', context);
    },
    async read_resource(params, context) {
      context.describe(`${params.server}: read_resource(${params.uri.slice(0, 200)})`);
      return serverUse(
        context,
        params.server,
        `read_resource ${params.uri}`,
        async (wait) => (await readResource(hub, params.server, params.uri, wait)).contents,
      );
    },
    async list_prompts(params, context) {
      return listing(params.server, 'prompts', context);
    },
    async get_prompt(params, context) {
      context.describe(`${params.server}: get_prompt(${params.name})`);
      return serverUse(
        context,
        params.server,
        `get_prompt ${params.name}`,
        async (wait) => (await getPrompt(hub, params.server, params.name, params.arguments, wait)).prompt,
      );
    },
  };
  /** A resource or prompt request, in the run log like a tool call. */
  const serverUse = async <T>(context: RequestContext, server: string, what: string, work: (wait: RunCall) => Promise<T>): Promise<T> => {
    const started = performance.now();
    const record = { run: context.runId, server, tool: what, arguments: {} };
    try {
      const value = await work(context);
      runLog?.toolCall({ ...record, outcome: 'ok', durationMs: performance.now() - started });
      return value;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      runLog?.toolCall({ ...record, outcome: outcomeOf(error), durationMs: performance.now() - started, error: message });
      throw error;
    }
  };
  const listing = (server: string, kind: Listing, context: RequestContext) => {
    const label = { resources: 'list_resources', resourceTemplates: 'list_resource_templates', prompts: 'list_prompts' }[kind];
    context.describe(`${server}: ${label}()`);
    return serverUse(context, server, label, async (wait) => {
      const { items, note } = await listAll(hub, server, kind, wait);
      return { items, ...(note ? { note } : {}) };
    });
  };

  const handlerIn =
    (scope: RunScope): RequestHandler =>
    async (method, params, context) => {
      if (!Object.hasOwn(schemas, method)) throw new Error(`unknown host method "${method}"`);
      const key = method as HostMethod;
      const parsed = schemas[key].safeParse(params ?? {});
      if (!parsed.success) {
        throw new Error(`bad parameters for ${method}: ${describeIssues(parsed.error, '', { whole: 'params', separator: '; ' })}`);
      }
      return (handlers[key] as (p: unknown, c: RequestContext, s: RunScope) => Promise<unknown>)(parsed.data, context, scope);
    };
  return {
    handle: handlerIn(newScope(false)),
    forRun: () => {
      const scope = newScope(true);
      return {
        handle: handlerIn(scope),
        toolCalls: () => scope.calls,
        toolImages: () => scope.images,
        usage: () => ({ resultBytes: scope.resultBytes, listings: scope.listings }),
        watchProgress: (sink) => {
          scope.progress = sink;
          return () => {
            if (scope.progress === sink) scope.progress = undefined;
          };
        },
      };
    },
  };
}
