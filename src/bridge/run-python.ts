// The one MCP tool, run_python: validated input (never a silent clamp), the run in the
// sandbox with proxied tools reachable, progress for long runs, cancellation, and a result
// with text, images and structured content. Never throws: failures are isError results.
import { randomUUID } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { SandboxConfig } from '../config/schema.ts';
import { SESSION_NAME, type SessionManager } from '../sandbox/sessions.ts';
import { runText, structuredRun } from './format.ts';
import type { ProxyHub } from './hub/hub.ts';
import type { RunLog } from './run-log.ts';

export const RUN_PYTHON = 'run_python';
export const MAX_CODE_CHARS = 1024 * 1024;
const PROGRESS_INTERVAL_MS = 2000;

export const RUN_PYTHON_DESCRIPTION =
  'Run Python 3 in a sandbox (no network, no host files). MCP tools are async functions: ' +
  'await mcp_<server>.<tool>(**kwargs). Find them with await search_tool_docs("what you need"), ' +
  'discovered_servers(), help(mcp_<server>.<tool>). Top-level await works; state persists per ' +
  'session; the last expression is returned.';

/** What the listing shows: types only, so the listing stays small. */
export function listedInput(sandbox: SandboxConfig) {
  return {
    code: z.string(),
    timeout: z.number().optional().describe(`seconds, max ${sandbox.maxTimeoutSeconds}`),
    session: z.string().optional(),
    reset: z.boolean().optional(),
    servers: z.array(z.string()).optional(),
  };
}

/** What a call must satisfy; checked in the handler so errors name the field. */
export function strictInput(sandbox: SandboxConfig) {
  return z.object({
    code: z.string().min(1, 'code is empty').max(MAX_CODE_CHARS),
    timeout: z
      .number()
      .positive('must be more than 0 seconds')
      .max(sandbox.maxTimeoutSeconds, `must be at most ${sandbox.maxTimeoutSeconds} seconds (the configured maximum)`)
      .optional(),
    session: z.string().regex(SESSION_NAME, 'must be 1-64 letters, digits, "_", "-" or "."').optional(),
    reset: z.boolean().optional(),
    servers: z.array(z.string().min(1).max(64)).max(64).optional(),
  });
}

export interface RunPythonDeps {
  sandbox: SessionManager;
  hub: ProxyHub;
  runLog?: RunLog;
  toolCalls: { toolCallsOf(runId: string): number; forget(runId: string): void };
  log: (message: string) => void;
}

export function registerRunPython(server: McpServer, config: SandboxConfig, deps: RunPythonDeps): void {
  const strict = strictInput(config);
  server.registerTool(
    RUN_PYTHON,
    { description: RUN_PYTHON_DESCRIPTION, inputSchema: listedInput(config) },
    async (listed, extra): Promise<CallToolResult> => {
      const checked = strict.safeParse(listed);
      if (!checked.success) {
        return errorResult(`Invalid arguments: ${checked.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
      }
      const args = checked.data;
      const runId = randomUUID();
      const session = args.session ?? 'default';
      const timeoutMs = (args.timeout ?? config.timeoutSeconds) * 1000;
      // Servers asked for up front start together; the first that fails is reported.
      const started = await Promise.allSettled((args.servers ?? []).map((name) => deps.hub.listTools(name)));
      const failed = started.findIndex((s) => s.status === 'rejected');
      if (failed >= 0) {
        const reason = (started[failed] as PromiseRejectedResult).reason as unknown;
        return errorResult(`Could not start server "${args.servers![failed]}": ${reason instanceof Error ? reason.message : String(reason)}`);
      }
      const progress = startProgress(extra, () => deps.toolCalls.toolCallsOf(runId));
      deps.runLog?.runStarted({ run: runId, session, code: args.code, timeoutMs });
      try {
        const result = await deps.sandbox.execute(args.code, {
          runId,
          session,
          timeoutMs,
          reset: args.reset ?? false,
          signal: extra.signal,
          onOutput: progress.onOutput,
        });
        const toolCalls = deps.toolCalls.toolCallsOf(runId);
        deps.runLog?.runEnded(result, { toolCalls });
        const audit = auditNote(deps.runLog);
        const content: CallToolResult['content'] = [{ type: 'text', text: runText(result, toolCalls) + (audit ? `\n[${audit}]` : '') }];
        for (const image of result.images) content.push({ type: 'image', data: image.data, mimeType: image.mime });
        const structuredContent = { ...structuredRun(result, toolCalls), ...(audit ? { auditLog: audit } : {}) };
        return { content, structuredContent, isError: result.status !== 'ok' };
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        deps.runLog?.runFailed({ run: runId, session, message });
        deps.log(`run ${runId} failed: ${message}`);
        // The same shape as a run's, so a client that reads only structuredContent (VS Code) gets the fix too.
        const type = error instanceof Error ? error.name : 'Error';
        const audit = auditNote(deps.runLog);
        return {
          ...errorResult(`${type}: ${message}${audit ? `\n[${audit}]` : ''}`),
          structuredContent: { status: 'error', error: { type, message }, session, runId, ...(audit ? { auditLog: audit } : {}) },
        };
      } finally {
        progress.stop();
        deps.toolCalls.forget(runId);
      }
    },
  );
}

/** Said in every result while the run log cannot be written, so the loss is seen. */
function auditNote(runLog: RunLog | undefined): string | undefined {
  const problem = runLog?.problem;
  return problem ? `the audit log is not being written (${problem}): this run is not recorded` : undefined;
}

function errorResult(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Sends MCP progress notifications while a run goes on, when the client asked for them. */
function startProgress(extra: Extra, toolCalls: () => number) {
  const token = extra._meta?.progressToken;
  let lastLine = '';
  const started = Date.now();
  const timer =
    token === undefined
      ? undefined
      : setInterval(() => {
          const seconds = Math.round((Date.now() - started) / 1000);
          const calls = toolCalls();
          const message = `running for ${seconds} s${calls > 0 ? `, ${calls} tool calls` : ''}${lastLine ? `: ${lastLine}` : ''}`;
          void extra
            .sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: seconds, message } })
            .catch(() => undefined);
        }, PROGRESS_INTERVAL_MS);
  return {
    onOutput: (_stream: 'stdout' | 'stderr', text: string) => {
      const lines = text.trimEnd().split('\n');
      const last = lines[lines.length - 1];
      if (last) lastLine = last.slice(0, 120);
    },
    stop: () => clearInterval(timer),
  };
}
