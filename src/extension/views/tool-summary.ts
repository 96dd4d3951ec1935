// A proxied tool as the Tools view shows it (kept apart from the view so that it is testable
// without VS Code): its title and a mark from its annotations, untrusted hints of its server.
import { toolHint, type ToolHint } from '../../bridge/catalog/tool-hints.ts';

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
