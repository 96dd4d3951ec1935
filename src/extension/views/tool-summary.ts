// A proxied tool and its server as the Tools view says them (kept apart from the view so that
// it is testable without VS Code): a tool's title and a mark from its annotations, untrusted
// hints of its server; a server's state in words and its error's first clause.
import { toolHint, type ToolHint } from '../../bridge/catalog/tool-hints.ts';
import { clip } from '../../shared/clip.ts';

export interface ToolSummary {
  name: string;
  title?: string;
  description?: string;
  hint?: ToolHint;
}

/** A cached tool (untrusted: from its server) as the view shows it. */
export function toolSummary(tool: {
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  annotations?: unknown;
}): ToolSummary {
  const hint = toolHint(tool.annotations);
  return {
    name: tool.name,
    ...(tool.title ? { title: tool.title } : {}),
    ...(tool.description ? { description: tool.description } : {}),
    ...(hint ? { hint } : {}),
  };
}

/** The line beside a tool's name: its hint first ("read-only · ", "destructive · "), then its title or description. */
export function toolDescription(tool: ToolSummary): string {
  const text = (tool.title || (tool.description ?? '').split('\n')[0] || '').slice(0, 80);
  return tool.hint ? `${tool.hint} · ${text}` : text;
}

/** A server's state in a few words: "not started", or "idle" when its tools are known from before (it starts on first use). */
export function serverStateText(state: string, toolsKnown: boolean): string {
  if (state === 'not-started') return toolsKnown ? 'idle' : 'not started';
  return state.replace(/-/g, ' ');
}

/**
 * What a server's error says first, to fit beside its name: without the `server "name" ` the row
 * already says, up to the first ":", ";", "(" or sentence end ("could not start"). The whole
 * message goes in the tooltip.
 */
export function errorClause(error: string, server: string): string {
  const prefix = `server ${JSON.stringify(server)} `;
  const text = (error.startsWith(prefix) ? error.slice(prefix.length) : error).trim();
  const clause = text.split(/:\s|;\s|\s\(|\.\s|\n/)[0]!.trim();
  return clip(clause || 'failed', 48);
}
