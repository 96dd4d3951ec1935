// The proxied servers' resources, resource templates and prompts, re-exposed on the bridge's own
// MCP server, so that its client sees them (VS Code: "Add Context > MCP Resources", prompts as
// commands). Namespaced by server, with no state to route by:
//   resource  URI  -> code-execution-mode://server/<server>/<its URI, as the server wrote it>
//   template       -> the same prefix before its URI template (filled in, it maps back by cutting the prefix)
//   prompt    name -> <server>.<prompt>
// Only enabled servers that the user allowed and the bridge does not refuse are listed or asked,
// and listing never asks for consent. What servers send is untrusted: items are schema-checked,
// icons and _meta dropped, listings capped (proxy.maxListedItems in all, proxy.maxResultBytes per
// server and in all), and a read or prompt is capped by the transport (proxy.maxResultBytes).
import { randomUUID } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  ErrorCode,
  GetPromptRequestSchema,
  GetPromptResultSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  McpError,
  PromptSchema,
  ReadResourceRequestSchema,
  ReadResourceResultSchema,
  ResourceSchema,
  ResourceTemplateSchema,
  type GetPromptResult,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
} from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import { SERVER_NAME } from '../../config/schema.ts';
import { outcomeOf } from '../sandbox-api/host-methods.ts';
import type { ProxyHub } from '../proxy/hub.ts';
import { jsonBytes, ProxyLimitError } from '../proxy/limits.ts';
import { sizeText } from '../../shared/byte-size.ts';
import { getPrompt, listAll, readResource, type Listing } from '../sandbox-api/resources.ts';
import type { RunLog } from '../../state/run-log/writer.ts';
import { kindOf } from '../../shared/error-kinds.ts';

export const PROXIED_URI_PREFIX = 'code-execution-mode://server/';

/** The longest a listing waits for one server (started if needed); a later start says list_changed. */
const EXPOSURE_WAIT_MS = 10_000;
/** Changes are told to the client at most this often (per kind), after the first one. */
const LIST_CHANGED_DEBOUNCE_MS = 250;
/** How often the user's consent decisions are checked for a change of what is exposed. */
const CONSENT_CHECK_MS = 2000;
const MAX_URI_CHARS = 8192;
const MAX_PROMPT_NAME_CHARS = 64 + 1 + 256;

export function exposedUri(server: string, uri: string): string {
  return `${PROXIED_URI_PREFIX}${server}/${uri}`;
}

/** The server and its own URI of an exposed URI; undefined for anything else. */
export function upstreamUri(uri: string): { server: string; uri: string } | undefined {
  if (!uri.startsWith(PROXIED_URI_PREFIX) || uri.length > MAX_URI_CHARS) return undefined;
  const rest = uri.slice(PROXIED_URI_PREFIX.length);
  const slash = rest.indexOf('/');
  if (slash <= 0 || slash === rest.length - 1) return undefined;
  const server = rest.slice(0, slash);
  return SERVER_NAME.test(server) ? { server, uri: rest.slice(slash + 1) } : undefined;
}

/**
 * Whether a listed resource's URI (or template) has a `.` or `..` segment: a client that
 * normalises `.../server/a/../b/x` would read server b's resource for an item server a listed.
 */
export function hasDotSegment(item: object): boolean {
  const uri =
    'uri' in item && typeof item.uri === 'string'
      ? item.uri
      : 'uriTemplate' in item && typeof item.uriTemplate === 'string'
        ? item.uriTemplate
        : undefined;
  return uri !== undefined && /(^|\/)\.\.?(\/|$)/.test(uri);
}

export function exposedPromptName(server: string, prompt: string): string {
  return `${server}.${prompt}`;
}

/**
 * The server and prompt of an exposed prompt name, among these servers. Server names may hold
 * dots: a name that two servers could own ("a" + "b.c", "a.b" + "c") is refused, and such
 * pairs are left out of listings (see gather), so that routing stays unambiguous.
 */
export function routePrompt(name: string, servers: readonly string[]): { server: string; prompt: string } | 'ambiguous' | undefined {
  const owners = servers.filter((s) => name.length > s.length + 1 && name.startsWith(`${s}.`));
  if (owners.length > 1) return 'ambiguous';
  const server = owners[0];
  return server === undefined ? undefined : { server, prompt: name.slice(server.length + 1) };
}

/** One of the bridge's own resources (listed first, before every proxied one). */
export interface OwnResource {
  uri: string;
  name: string;
  description: string;
  mimeType: string;
  text: () => string;
}

export interface ExposureOptions {
  hub: ProxyHub;
  runLog?: RunLog | undefined;
  log: (message: string) => void;
  /** proxy.maxListedItems */
  maxListedItems: number;
  own: readonly OwnResource[];
  /** How long a listing waits for one server; EXPOSURE_WAIT_MS by default. */
  waitMs?: number;
}

export interface Exposure {
  /** A proxied server said its resources or prompts changed. */
  listChanged(server: string, kind: 'resources' | 'prompts'): void;
  close(): void;
}

/** Installs the resource and prompt handlers of the bridge's server; call before it connects. */
export function exposeProxied(server: McpServer, options: ExposureOptions): Exposure {
  const { hub, log } = options;
  const waitMs = options.waitMs ?? EXPOSURE_WAIT_MS;
  const maxBytes = hub.proxyLimits.maxResultBytes;
  /** Enabled servers the user allowed (the hub refuses the rest when asked). */
  const exposed = () => hub.catalog.names().filter((name) => hub.consentState(name) === 'allowed');
  const isExposed = (name: string) => exposed().includes(name);

  server.server.registerCapabilities({ resources: { listChanged: true }, prompts: { listChanged: true } });

  /** Every exposed server's items of one listing, in configuration order, within the caps. */
  const gather = async <T extends { name: string }>(
    listing: Listing,
    schema: z.ZodType<T>,
    rename: (server: string, item: T) => T,
    signal: AbortSignal,
  ): Promise<T[]> => {
    const perServer = await Promise.all(
      exposed().map(async (name) => {
        try {
          const { items, note } = await listAll(hub, name, listing, { signal: AbortSignal.any([signal, AbortSignal.timeout(waitMs)]) });
          if (note) log(`server ${name}: ${listing} listed to the client ${note}`);
          return items.flatMap((item) => {
            const parsed = schema.safeParse(item);
            return parsed.success && !hasDotSegment(parsed.data) ? [rename(name, parsed.data)] : [];
          });
        } catch (error) {
          // A server without the capability has nothing to list; anything else is said.
          const message = error instanceof Error ? error.message : String(error);
          if (!/does not declare the capability/.test(message))
            log(`server ${name}: its ${listing} are not listed to the client: ${message}`);
          return [];
        }
      }),
    );
    const items: T[] = [];
    const names = new Set<string>();
    // As the JSON array the client gets: brackets, and a comma per item.
    let bytes = 2;
    let cut = 0;
    for (const item of perServer.flat()) {
      // Prompt names two servers could own are left out (see routePrompt).
      if (listing === 'prompts' && (names.has(item.name) || routePrompt(item.name, hub.catalog.names()) === 'ambiguous')) continue;
      const size = jsonBytes(item) + 1;
      if (items.length >= options.maxListedItems || bytes + size > maxBytes) {
        cut++;
        continue;
      }
      names.add(item.name);
      bytes += size;
      items.push(item);
    }
    if (cut > 0) {
      log(
        `${cut} proxied ${listing} left out of the listing to the client (proxy.maxListedItems ${options.maxListedItems}, proxy.maxResultBytes ${sizeText(maxBytes)})`,
      );
    }
    return items;
  };

  /** A read or prompt asked by the client: in the run log as a run of its own (session "client"). */
  const audited = async <T>(name: string, what: string, work: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const run = `client-${randomUUID()}`;
    const runLog = options.runLog;
    runLog?.runStarted({ run, session: 'client', code: `# asked by the bridge's client: ${name}: ${what}`.slice(0, 2000), timeoutMs: 0 });
    const end = (outcome: ReturnType<typeof outcomeOf> | 'ok', error?: string) => {
      const durationMs = performance.now() - started;
      runLog?.toolCall({ run, server: name, tool: what, arguments: {}, outcome, durationMs, ...(error ? { error } : {}) });
      runLog?.runEnded(
        {
          runId: run,
          session: 'client',
          status: outcome === 'ok' ? 'ok' : 'error',
          stdout: '',
          stderr: '',
          value: null,
          error: error ? { type: 'ClientRequestError', message: error, traceback: '' } : null,
          images: [],
          durationMs,
          omitted: { stdout: 0, stderr: 0, images: 0 },
          truncated: false,
          sessionLost: false,
          coldStart: false,
          requests: 1,
        },
        { toolCalls: 1 },
      );
      log(`client: ${name}: ${what.slice(0, 300)}: ${outcome}${error ? ` (${error})` : ''}`);
    };
    try {
      const value = await work();
      end('ok');
      return value;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      end(outcomeOf(error), message);
      throw asMcpError(error);
    }
  };

  const sizeChecked = <T>(value: T, what: string): T => {
    const bytes = jsonBytes(value);
    if (bytes > maxBytes)
      throw new ProxyLimitError(
        `${what} is ${sizeText(bytes)}, over the ${sizeText(maxBytes)} the bridge passes on (proxy.maxResultBytes)`,
      );
    return value;
  };

  server.server.setRequestHandler(ListResourcesRequestSchema, async (_request, extra) => {
    const own: Resource[] = options.own.map((r) => ({ uri: r.uri, name: r.name, description: r.description, mimeType: r.mimeType }));
    const proxied = await gather(
      'resources',
      ResourceSchema,
      (name, { icons: _i, _meta: _m, ...r }) => ({ ...r, uri: exposedUri(name, r.uri), ...labels(name, r) }),
      extra.signal,
    );
    return { resources: [...own, ...proxied] };
  });

  server.server.setRequestHandler(ListResourceTemplatesRequestSchema, async (_request, extra) => {
    const resourceTemplates: ResourceTemplate[] = await gather(
      'resourceTemplates',
      ResourceTemplateSchema,
      (name, { icons: _i, _meta: _m, ...t }) => ({ ...t, uriTemplate: exposedUri(name, t.uriTemplate), ...labels(name, t) }),
      extra.signal,
    );
    return { resourceTemplates };
  });

  server.server.setRequestHandler(ReadResourceRequestSchema, async (request, extra): Promise<ReadResourceResult> => {
    const { uri } = request.params;
    const own = options.own.find((r) => r.uri === uri);
    if (own) return { contents: [{ uri, mimeType: own.mimeType, text: own.text() }] };
    const target = upstreamUri(uri);
    if (!target) throw new McpError(ErrorCode.InvalidParams, `Resource ${uri.slice(0, 300)} not found`);
    if (!isExposed(target.server)) throw notExposed(target.server);
    return audited(target.server, `read_resource ${target.uri}`, async () => {
      const { contents } = await readResource(hub, target.server, target.uri, { signal: extra.signal });
      const parsed = ReadResourceResultSchema.shape.contents.safeParse(contents);
      if (!parsed.success) throw new Error(`server "${target.server}" sent contents that are not valid resource contents`);
      return sizeChecked({ contents: parsed.data.map((c) => ({ ...c, uri: exposedUri(target.server, c.uri) })) }, 'the resource');
    });
  });

  server.server.setRequestHandler(ListPromptsRequestSchema, async (_request, extra) => {
    const prompts: Prompt[] = await gather(
      'prompts',
      PromptSchema,
      (name, { icons: _i, _meta: _m, ...p }) => ({ ...p, name: exposedPromptName(name, p.name), title: `${name}: ${p.title ?? p.name}` }),
      extra.signal,
    );
    return { prompts };
  });

  server.server.setRequestHandler(GetPromptRequestSchema, async (request, extra): Promise<GetPromptResult> => {
    const { name } = request.params;
    const route = name.length <= MAX_PROMPT_NAME_CHARS ? routePrompt(name, hub.catalog.names()) : undefined;
    if (route === 'ambiguous') throw new McpError(ErrorCode.InvalidParams, `Prompt ${name} could belong to more than one server`);
    if (!route) throw new McpError(ErrorCode.InvalidParams, `Prompt ${name.slice(0, 300)} not found`);
    if (!isExposed(route.server)) throw notExposed(route.server);
    return audited(route.server, `get_prompt ${route.prompt}`, async () => {
      const { prompt } = await getPrompt(hub, route.server, route.prompt, request.params.arguments ?? {}, { signal: extra.signal });
      const parsed = GetPromptResultSchema.safeParse(prompt);
      if (!parsed.success) throw new Error(`server "${route.server}" sent a prompt that is not a valid prompt result`);
      const { description, messages } = parsed.data;
      return sizeChecked(
        {
          ...(description !== undefined ? { description } : {}),
          messages: messages.map((m) => ({ ...m, content: withExposedUris(route.server, m.content) })),
        },
        'the prompt',
      );
    });
  });

  // Changes, told to the client once per burst: a server's own list_changed, and a server that
  // started (a listing may have gone on without it).
  const timers = new Map<'resources' | 'prompts', NodeJS.Timeout>();
  const tell = (kind: 'resources' | 'prompts') => {
    if (timers.has(kind)) return;
    const timer = setTimeout(() => {
      timers.delete(kind);
      if (!server.isConnected()) return;
      if (kind === 'resources') server.sendResourceListChanged();
      else server.sendPromptListChanged();
    }, LIST_CHANGED_DEBOUNCE_MS);
    timer.unref();
    timers.set(kind, timer);
  };
  const running = new Set<string>();
  const unwatch = hub.catalog.onChange(() => {
    for (const record of hub.catalog.records()) {
      const now = record.state === 'running';
      if (now && !running.has(record.name) && isExposed(record.name)) {
        tell('resources');
        tell('prompts');
      }
      if (now) running.add(record.name);
      else running.delete(record.name);
    }
  });
  // The user allowing or revoking a server changes what is exposed, with nothing else to say so.
  let shown = exposed().join('\n');
  const consentCheck = setInterval(() => {
    const now = exposed().join('\n');
    if (now === shown) return;
    shown = now;
    tell('resources');
    tell('prompts');
  }, CONSENT_CHECK_MS);
  consentCheck.unref();

  return {
    listChanged: (name, kind) => {
      if (isExposed(name)) tell(kind);
    },
    close: () => {
      unwatch();
      clearInterval(consentCheck);
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
    },
  };
}

/** "<server>.<name>" and "<server>: <title or name>", so that the client's lists say whose it is. */
function labels(server: string, item: { name: string; title?: string | undefined }): { name: string; title: string } {
  return { name: `${server}.${item.name}`, title: `${server}: ${item.title ?? item.name}` };
}

type PromptContent = GetPromptResult['messages'][number]['content'];

/** Resources a prompt embeds or links to, under their exposed URIs (readable through the bridge). */
function withExposedUris(server: string, content: PromptContent): PromptContent {
  if (content.type === 'resource') return { ...content, resource: { ...content.resource, uri: exposedUri(server, content.resource.uri) } };
  if (content.type === 'resource_link') return { ...content, uri: exposedUri(server, content.uri) };
  return content;
}

function notExposed(server: string): McpError {
  return new McpError(
    ErrorCode.InvalidParams,
    `server "${server}" is not exposed: it is not enabled, not allowed by the user, or not proxied`,
  );
}

/** A failure as the client gets it: a proxied server's JSON-RPC error keeps its code and data. */
function asMcpError(error: unknown): McpError {
  if (error instanceof McpError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const { code, data } = (error ?? {}) as { code?: unknown; data?: unknown };
  if (kindOf(error) === 'server-error' && typeof code === 'number') return new McpError(code, message, data);
  return new McpError(ErrorCode.InternalError, message);
}
