// A proxied server's resources, resource templates and prompts, for sandboxed code: listings
// (every page, up to a page count and the result byte cap), reading one resource (a URI from a
// listing, a filled-in template, or a tool's `resource_link`), and getting one prompt. What
// servers send is untrusted: every message is already capped by the transport
// (proxy.maxResultBytes); a listing of many pages is cut at the same cap, and says so.
import type { ProxyHub } from '../proxy/hub.ts';
import { jsonBytes, ProxyLimitError } from '../proxy/limits.ts';
import { sizeText } from '../../shared/byte-size.ts';
import type { RunCall } from '../run-call.ts';

/** The most pages a listing follows. */
const MAX_LIST_PAGES = 20;

export type Listing = 'resources' | 'resourceTemplates' | 'prompts';

/** What a request of a run waits with: the run's signal, and its clock paused while a server starts. */
type Wait = Pick<RunCall, 'signal' | 'untimed'>;

/** Every item of a listing (up to the caps); `note` says what was left out. */
export async function listAll(
  hub: ProxyHub,
  server: string,
  listing: Listing,
  wait: Wait,
): Promise<{ server: string; items: unknown[]; note?: string }> {
  const maxBytes = hub.proxyLimits.maxResultBytes;
  const capability = listing === 'prompts' ? 'prompts' : 'resources';
  const items: unknown[] = [];
  let bytes = 0;
  let cursor: string | undefined;
  let name = server;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const params = cursor ? { cursor } : undefined;
    const { server: resolved, result } = await hub.serverRequest(
      server,
      capability,
      `listing ${listing === 'resourceTemplates' ? 'resource templates' : listing}`,
      async (client, options): Promise<{ items: unknown[]; nextCursor?: string | undefined }> => {
        if (listing === 'resources') {
          const r = await client.listResources(params, options);
          return { items: r.resources, nextCursor: r.nextCursor };
        }
        if (listing === 'resourceTemplates') {
          const r = await client.listResourceTemplates(params, options);
          return { items: r.resourceTemplates, nextCursor: r.nextCursor };
        }
        const r = await client.listPrompts(params, options);
        return { items: r.prompts, nextCursor: r.nextCursor };
      },
      wait,
    );
    name = resolved;
    for (const item of result.items) {
      bytes += jsonBytes(item);
      if (bytes > maxBytes)
        return { server: name, items, note: `cut at ${sizeText(maxBytes)} (proxy.maxResultBytes): ${items.length} shown` };
      items.push(item);
    }
    cursor = result.nextCursor;
    if (!cursor) return { server: name, items };
  }
  return { server: name, items, note: `cut after ${MAX_LIST_PAGES} pages: ${items.length} shown, the server has more` };
}

/** The contents of one resource: `[{uri, mimeType?, text}]` or `[{uri, mimeType?, blob (base64)}]`. */
export async function readResource(
  hub: ProxyHub,
  server: string,
  uri: string,
  wait: Wait,
): Promise<{ server: string; contents: unknown[] }> {
  const { server: name, result } = await hub.serverRequest(
    server,
    'resources',
    `reading ${uri}`,
    (client, options) => client.readResource({ uri }, options),
    wait,
  );
  return { server: name, contents: result.contents };
}

/** A prompt filled in: `{description?, messages: [{role, content}]}`. */
export async function getPrompt(
  hub: ProxyHub,
  server: string,
  prompt: string,
  args: Record<string, string>,
  wait: Wait,
): Promise<{ server: string; prompt: unknown }> {
  const bytes = jsonBytes(args);
  const max = hub.proxyLimits.maxArgumentBytes;
  if (bytes > max) {
    throw new ProxyLimitError(
      `the arguments are ${sizeText(bytes)} as JSON, over the ${sizeText(max)} a call may send (proxy.maxArgumentBytes)`,
    );
  }
  const { server: name, result } = await hub.serverRequest(
    server,
    'prompts',
    `getting prompt ${prompt}`,
    (client, options) => client.getPrompt({ name: prompt, arguments: args }, options),
    wait,
  );
  const { description, messages, _meta } = result;
  return { server: name, prompt: { ...(description !== undefined ? { description } : {}), messages, ...(_meta ? { _meta } : {}) } };
}
