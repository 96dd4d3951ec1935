// Finding run_python of the bridge VS Code started, among the language-model tools, and reading
// what a call returned. Run Selection and Re-run go through VS Code's own MCP client this way,
// so their runs land in the same bridge, session and run log as the agent's. No 'vscode' here:
// the parts are unit-tested.
import { z } from 'zod';
import { RUN_PYTHON, RUN_PYTHON_DESCRIPTION } from '../bridge/tool/run-python.ts';

/** run_python's description in any of its forms (gVisor, WebAssembly, with packages, a workspace note). */
export function isRunPythonDescription(text: string): boolean {
  const plain = text
    .replace(/^Python 3 (gVisor |WebAssembly )sandbox/, 'Python 3 sandbox')
    .replace(/^Python 3 sandbox, with packages [^(]*\(/, 'Python 3 sandbox, standard library only (')
    .replace('(no pip, no network, no subprocesses)', '(no pip, no network)');
  return plain.startsWith(RUN_PYTHON_DESCRIPTION);
}

/**
 * VS Code names an MCP tool `mcp_<server label, lowercased, other characters to "_", cut to
 * 13 characters (12 and a digit when two servers share it)>_<tool>`.
 */
export function bridgeToolName(tools: ReadonlyArray<{ name: string; description: string }>, serverLabel: string): string | undefined {
  const slug = serverLabel
    .toLowerCase()
    .replace(/[^a-z0-9_.-]+/g, '_')
    .slice(0, 12);
  const candidates = tools.filter((t) => t.name.endsWith(`_${RUN_PYTHON}`));
  const ours = (t: { name: string }) => t.name.startsWith(`mcp_${slug}`);
  const described = (t: { description: string }) => isRunPythonDescription(t.description);
  return (candidates.find((t) => ours(t) && described(t)) ?? candidates.find(ours) ?? candidates.find(described))?.name;
}

const outcomeSchema = z.object({
  status: z.string().optional(),
  session: z.string().optional(),
  /** Present for a run that ran (absent when it was refused, or no sandbox could start). */
  durationMs: z.number().optional(),
  error: z.object({ type: z.string(), message: z.string() }).nullable().optional(),
  auditLog: z.string().optional(),
});
export type RunOutcome = z.infer<typeof outcomeSchema> & {
  text: string;
  /** No sandbox could run the code (from the run log, for a text-only result). */
  notRun?: boolean;
};

/** Refusals of the call itself: nothing ran and the run log has no run. */
export const REFUSED_TYPES: readonly string[] = ['InvalidArguments', 'ServerUnavailable'];

/** The run the log has for a call made at `since` (the result names no run: the model needs no id). */
export function findCallRun<R extends { code: string; session: string; started: string }>(
  runs: readonly R[],
  code: string,
  session: string,
  since: number,
): R | undefined {
  // A second of slack for clocks read in two processes.
  return runs
    .filter((r) => r.code === code && r.session === session && Date.parse(r.started) >= since - 1000)
    .sort((a, b) => b.started.localeCompare(a.started))[0];
}

/** The start of the note every result carries while the run log cannot be written (bridge/tool/run-python.ts). */
const AUDIT_NOTE = /^\[(the audit log is not being written .*)\]$/m;

/**
 * VS Code hands back the structured content as JSON text when there is one, else the text. The
 * extension's own bridge sends text only (structuredResults off): then the status comes from the
 * run log (outcomeOfRun), and a text with no run behind it is a refusal.
 */
export function runOutcome(text: string): RunOutcome {
  try {
    const parsed = outcomeSchema.safeParse(JSON.parse(text));
    if (parsed.success) return { ...parsed.data, text };
  } catch {
    // plain text: the bridge's text form, an argument error or a client-side failure
  }
  const audit = AUDIT_NOTE.exec(text)?.[1];
  return { text, ...(audit ? { auditLog: audit } : {}) };
}

/** The outcome of a text-only result, from the run the log has for it. */
export function outcomeOfRun(
  run: { status?: string; session: string; durationMs?: number; error: { type: string; message: string } | null; notRun?: boolean },
  text: string,
): RunOutcome {
  const audit = AUDIT_NOTE.exec(text)?.[1];
  return {
    text,
    session: run.session,
    ...(run.status !== undefined ? { status: run.status } : {}),
    ...(run.durationMs !== undefined ? { durationMs: run.durationMs } : {}),
    ...(run.error ? { error: { type: run.error.type, message: run.error.message } } : {}),
    ...(run.notRun ? { notRun: true } : {}),
    ...(audit ? { auditLog: audit } : {}),
  };
}
