// Reading a server's tool list page by page within the caps: so many tools, so many bytes in
// all, so many bytes per tool, so many pages. What is cut is said in our words (for the log,
// the Tools view and discovered_servers()); tool names, which the server chose, only in the log.
import { jsonBytes } from './limits.ts';
import { sizeText } from '../../shared/byte-size.ts';
import { clip } from '../../shared/clip.ts';

export interface ToolListCaps {
  maxTools: number;
  maxBytes: number;
  maxToolBytes: number;
  maxPages: number;
}

export interface Page {
  tools: readonly unknown[];
  nextCursor?: string | undefined;
}

export interface CappedToolList {
  tools: unknown[];
  /** What was left out and why, one sentence each; empty when the whole list was kept. */
  notes: string[];
  /** Names (cut short) of tools left out for their size, for the log. */
  oversized: string[];
}

export const MAX_PAGES = 50;

export async function readToolList(page: (cursor: string | undefined) => Promise<Page>, caps: ToolListCaps): Promise<CappedToolList> {
  const tools: unknown[] = [];
  const oversized: string[] = [];
  let bytes = 0;
  let cut: 'count' | 'bytes' | undefined;
  let cursor: string | undefined;
  let pages = 0;
  do {
    const result = await page(cursor);
    pages++;
    cursor = result.nextCursor || undefined;
    for (const tool of result.tools) {
      const size = jsonBytes(tool);
      if (size > caps.maxToolBytes) {
        oversized.push(nameOf(tool));
        continue;
      }
      if (tools.length >= caps.maxTools) cut = 'count';
      else if (bytes + size > caps.maxBytes) cut = 'bytes';
      if (cut) break;
      tools.push(tool);
      bytes += size;
    }
  } while (!cut && cursor && pages < caps.maxPages);

  const notes: string[] = [];
  if (cut === 'count')
    notes.push(`it lists more than ${caps.maxTools} tools; the first ${tools.length} are kept (proxy.maxToolsPerServer)`);
  if (cut === 'bytes')
    notes.push(`its tool list is over ${sizeText(caps.maxBytes)}; the first ${tools.length} tools are kept (proxy.maxToolListBytes)`);
  if (oversized.length > 0) {
    notes.push(
      `${oversized.length} ${oversized.length === 1 ? 'tool was' : 'tools were'} left out for being over ${sizeText(caps.maxToolBytes)} each (proxy.maxToolSchemaBytes)`,
    );
  }
  if (!cut && cursor) notes.push(`its tool list goes on past ${caps.maxPages} pages; the rest is not read`);
  return { tools, notes, oversized: oversized.slice(0, 5) };
}

function nameOf(tool: unknown): string {
  const name = tool && typeof tool === 'object' ? (tool as { name?: unknown }).name : undefined;
  const text = typeof name === 'string' ? name : '(no name)';
  return clip(text, 64);
}
