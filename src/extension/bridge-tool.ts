// Finding run_python of the bridge VS Code started, among the language-model tools, and reading
// what a call returned. Run Selection and Re-run go through VS Code's own MCP client this way,
// so their runs land in the same bridge, session and run log as the agent's. No 'vscode' here:
// the parts are unit-tested.
import { z } from 'zod';
import { RUN_PYTHON, RUN_PYTHON_DESCRIPTION } from '../bridge/run-python.ts';

/**
 * VS Code names an MCP tool `mcp_<server label, lowercased, other characters to "_", cut to
 * 13 characters (12 and a digit when two servers share it)>_<tool>`.
 */
export function bridgeToolName(tools: ReadonlyArray<{ name: string; description: string }>, serverLabel: string): string | undefined {
  const slug = serverLabel.toLowerCase().replace(/[^a-z0-9_.-]+/g, '_').slice(0, 12);
  const candidates = tools.filter((t) => t.name.endsWith(`_${RUN_PYTHON}`));
  const ours = (t: { name: string }) => t.name.startsWith(`mcp_${slug}`);
  const described = (t: { description: string }) => t.description === RUN_PYTHON_DESCRIPTION;
  return (candidates.find((t) => ours(t) && described(t)) ?? candidates.find(ours) ?? candidates.find(described))?.name;
}

const outcomeSchema = z.object({
  runId: z.string().optional(),
  status: z.string().optional(),
  session: z.string().optional(),
  /** Present for a run that ran (absent when no sandbox could start). */
  stdout: z.string().optional(),
  error: z.object({ type: z.string(), message: z.string() }).nullable().optional(),
  auditLog: z.string().optional(),
});
export type RunOutcome = z.infer<typeof outcomeSchema> & { text: string };

/** VS Code hands back the structured content as JSON text when there is one, else the text. */
export function runOutcome(text: string): RunOutcome {
  try {
    const parsed = outcomeSchema.safeParse(JSON.parse(text));
    if (parsed.success) return { ...parsed.data, text };
  } catch {
    // plain text: an argument error or a client-side failure
  }
  return { text };
}
