// The one MCP tool, run_python: validated input (never a silent clamp), the run in the
// sandbox with proxied tools reachable, progress for long runs, cancellation, and a result
// with text, images and structured content (results/format.ts). Never throws: failures are isError
// results of the same shape.
import { randomUUID } from 'node:crypto';
import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { SandboxConfig } from '../../config/schema.ts';
import {
  distributionsText,
  type EgressHandler,
  type ImageDistributions,
  isGvisor,
  orderedDistributions,
  SESSION_NAME,
  type RequestHandler,
  type Sandbox,
  workspaceRequested,
  workspaceTargetsOf,
} from '../../sandbox/index.ts';
import type { FoundImage } from '../results/base64-text.ts';
import { readRun, renderText, runViewShape, shapeResult, type RunView } from '../results/format.ts';
import { runMeter, type ToolUsage } from '../results/meter.ts';
import type { ProxyHub } from '../proxy/hub.ts';
import type { RunCall } from '../run-call.ts';
import { LastLine, progressMessage, toolProgressMessage } from './progress.ts';
import type { ToolProgressSink } from '../sandbox-api/host-methods.ts';
import type { RunLog } from '../../state/run-log/writer.ts';
import { describeIssues } from '../../config/load.ts';
import { networkListingWords, networkOn } from '../../config/network-summary.ts';

export const RUN_PYTHON = 'run_python';
export const MAX_CODE_CHARS = 1024 * 1024;
const PROGRESS_INTERVAL_MS = 2000;
/** The shortest gap between two relayed progress notifications of proxied tools. */
const TOOL_PROGRESS_GAP_MS = 250;
/**
 * A result bigger than this (as JSON) goes without its images: MCP clients drop the connection
 * over 10 MiB. The budgets keep results far below it; this is the last line of defence.
 */
export const MAX_RESULT_BYTES = 9 * 1024 * 1024;

export const RUN_PYTHON_DESCRIPTION =
  'Python 3 sandbox, standard library only (no pip, no network). MCP tools: ' +
  'await mcp_<server>.<tool>(**kwargs); failures raise ToolError. Find: await search_tool_docs("query"). ' +
  'Docs: await query_tool_docs(server, tool, detail="full"). emit_image(png) shows images. ' +
  'Output capped; last expression returned.';

/** Added to the description when the user's folder is mounted (sandbox.workspace). */
export const WORKSPACE_NOTE = ' Read-only files: /workspace.';
/** The same words when several folders are mounted, one per folder (names: ls /workspace). */
export const WORKSPACE_FOLDERS_NOTE = ' Read-only folders in /workspace.';

/** Where the mounted folders are, in a few words (the listing has no room for their names). */
export function workspaceNote(sandbox: SandboxConfig): string {
  if (!workspaceRequested(sandbox)) return '';
  return workspaceTargetsOf(sandbox).length === 1 ? WORKSPACE_NOTE : WORKSPACE_FOLDERS_NOTE;
}

/** Names the listing gives of the image's packages at most (the same order as everywhere; the rest counted). */
export const LISTED_PACKAGE_NAMES = 3;
/**
 * Room the listing has for those names, in characters less what else it carries (the gVisor
 * word, the workspace note): it is at its token budget, so they get what is left, down to none.
 */
export const LISTED_PACKAGE_ROOM = 34;
/** What a name takes of that room at least (a short name costs about as many tokens as a longer one). */
const NAME_ROOM = 8;
const GVISOR_WORD = 'gVisor ';
/** The room the gVisor word takes (it costs more tokens than its length says). */
const GVISOR_ROOM = 10;

/** "with packages numpy, scipy and 12 more" in the room left, else "with packages". */
function listedPackages(packages: ImageDistributions, room: number): string {
  let named = 0;
  for (const name of orderedDistributions(packages.names)) {
    room -= Math.max(name.length, NAME_ROOM) + 2;
    if (named >= LISTED_PACKAGE_NAMES || room < 0) break;
    named++;
  }
  return named > 0 ? `with packages ${distributionsText(packages, named)}` : 'with packages';
}

/**
 * The listing's description: the fixed text, plus where the workspace is when one is mounted.
 * When the image runs use has third-party distributions (its own, or sandbox.packages built
 * into it), "standard library only" becomes "with packages numpy, scipy and 12 more": the
 * notable ones first, as the capabilities resource and import errors say them, as many as the
 * listing has room for. With sandbox.network on, "no network" says whether listed hosts are
 * reached or each host is asked about. In the WebAssembly sandbox it says so, and that there are no
 * subprocesses (and no workspace).
 */
export function runPythonDescription(sandbox: SandboxConfig, packages?: ImageDistributions, wasm = sandbox.backend === 'wasm'): string {
  let text = RUN_PYTHON_DESCRIPTION;
  if (wasm) return text.replace('Python 3 sandbox', 'Python 3 WebAssembly sandbox').replace('no network)', 'no network, no subprocesses)');
  const gvisor = isGvisor(sandbox.ociRuntime);
  const note = workspaceNote(sandbox);
  // sandbox.network on: which hosts is in the instructions and capabilities; here, a few words.
  const network = networkListingWords(sandbox.network);
  if (networkOn(sandbox.network)) text = text.replace('no network)', `${network})`);
  if (packages && packages.names.length + packages.more > 0) {
    const room = LISTED_PACKAGE_ROOM - (gvisor ? GVISOR_ROOM : 0) - note.length - (network.length - 'no network'.length);
    text = text.replace('standard library only', listedPackages(packages, room));
  }
  // The isolation tier, when it is not the runtime's default: code may behave differently there.
  if (gvisor) text = text.replace('Python 3 sandbox', `Python 3 ${GVISOR_WORD}sandbox`);
  return text + note;
}

/** What the listing shows: types only, so the listing stays small. */
export function listedInput(sandbox: SandboxConfig) {
  return {
    code: z.string().describe('top-level await works'),
    timeout: z.number().optional().describe(`seconds, max ${sandbox.maxTimeoutSeconds}`),
    session: z.string().optional().describe('state persists per session'),
    reset: z.boolean().optional().describe('fresh interpreter first'),
    servers: z.array(z.string()).optional().describe('start these first'),
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
  sandbox: Sandbox;
  hub: ProxyHub;
  runLog?: RunLog;
  /** Each run's own request handler, and what its requests left (sandbox-api/host-methods.ts). */
  requests: {
    forRun(): {
      handle: RequestHandler;
      toolCalls(): number;
      toolImages(): readonly FoundImage[];
      watchProgress?(sink: ToolProgressSink): () => void;
      /** What the run's tool calls handed the code (the token meter); absent: not metered. */
      usage?(): ToolUsage;
    };
  };
  log: (message: string) => void;
  /** Whether results carry structuredContent (and the tool an outputSchema); config.structuredResults. */
  structured?: boolean;
  /** Told of the session each run used, once its result is in (the session may hold state now). */
  onSessionUsed?: (session: string) => void;
  /** The distributions of the image runs use, as known when the bridge starts (none: standard library only). */
  installedPackages?: ImageDistributions;
  /** Each run's answers about its network requests (sandbox.network): questions to the user, and the run log's lines. */
  egress?: (run: Pick<RunCall, 'signal' | 'untimed' | 'session'>) => EgressHandler;
}

/** Registers run_python; its description changes (and the client is told) through the returned tool's update(). */
export function registerRunPython(server: McpServer, config: SandboxConfig, deps: RunPythonDeps): RegisteredTool {
  const strict = strictInput(config);
  const structured = deps.structured ?? true;
  // Without structured results the text alone goes out: a client that prefers structuredContent reads the text.
  const sent = (result: CallToolResult): CallToolResult => {
    if (structured) return result;
    const { structuredContent: _left, ...text } = result;
    return text;
  };
  return server.registerTool(
    RUN_PYTHON,
    {
      description: runPythonDescription(config, deps.installedPackages),
      inputSchema: listedInput(config),
      ...(structured ? { outputSchema: runViewShape } : {}),
    },
    async (listed, extra): Promise<CallToolResult> => sent(await runOnce(listed, extra)),
  );

  async function runOnce(listed: unknown, extra: Extra): Promise<CallToolResult> {
    const checked = strict.safeParse(listed);
    if (!checked.success) {
      return failed('InvalidArguments', describeIssues(checked.error, '', { whole: 'arguments', separator: '; ' }));
    }
    const args = checked.data;
    const runId = randomUUID();
    const session = args.session ?? 'default';
    const timeoutMs = (args.timeout ?? config.timeoutSeconds) * 1000;
    // Servers asked for up front start together; the first that fails is reported.
    const started = await Promise.allSettled((args.servers ?? []).map((name) => deps.hub.listTools(name)));
    const refused = started.findIndex((s) => s.status === 'rejected');
    if (refused >= 0) {
      const reason = (started[refused] as PromiseRejectedResult).reason as unknown;
      return failed(
        'ServerUnavailable',
        `Could not start server "${args.servers![refused]}": ${reason instanceof Error ? reason.message : String(reason)}`,
      );
    }
    const requests = deps.requests.forRun();
    // The run's network questions stop with it (the sandbox keeps them off the run's clock).
    const egress = deps.egress?.({ signal: extra.signal, session });
    const progress = startProgress(extra, () => requests.toolCalls(), requests.watchProgress && ((sink) => requests.watchProgress!(sink)));
    deps.runLog?.runStarted({ run: runId, session, code: args.code, timeoutMs });
    try {
      const result = await deps.sandbox.execute(args.code, {
        runId,
        session,
        timeoutMs,
        reset: args.reset ?? false,
        signal: extra.signal,
        onOutput: progress.onOutput,
        onRequest: requests.handle,
        ...(egress ? { egress } : {}),
      });
      deps.onSessionUsed?.(session);
      const toolCalls = requests.toolCalls();
      const reading = readRun({ result, toolCalls, toolImages: requests.toolImages(), budget: config.resultChars });
      // Shaped before the record is written, so the record has the meter of the text the model gets.
      const shaped = shapeResult(reading, { maxBytes: MAX_RESULT_BYTES });
      const meter = requests.usage ? runMeter(shaped.reply, requests.usage()) : undefined;
      // The log keeps the full record: the output as captured, every image emitted or returned.
      const tier = deps.sandbox.tier();
      deps.runLog?.runEnded(
        { ...result, images: [...reading.recorded] },
        { toolCalls, ...(tier ? { sandbox: tier } : {}), ...(meter ? { meter } : {}) },
      );
      // A write that fails now is said in this result (shaped again, with the note).
      const audit = auditNote(deps.runLog);
      return (audit ? shapeResult(reading, { audit, maxBytes: MAX_RESULT_BYTES }) : shaped).reply;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      // One name for the model and the log: the error's own.
      const type = error instanceof Error ? error.name : 'Error';
      deps.runLog?.runFailed({ run: runId, session, type, message });
      deps.log(`run ${runId} failed: ${message}`);
      // The same shape as a run's, so a client that reads only structuredContent gets the fix too.
      return failed(type, message, session, auditNote(deps.runLog));
    } finally {
      progress.stop();
    }
  }
}

/** Said in every result while the run log cannot be written, so the loss is seen. */
function auditNote(runLog: RunLog | undefined): string | undefined {
  const problem = runLog?.problem;
  return problem ? `the audit log is not being written (${problem}): this run is not recorded` : undefined;
}

/** A failure before the code could run (no durationMs: the code did not run). */
function failed(type: string, message: string, session = 'default', audit?: string): CallToolResult {
  const view: RunView = { status: 'error', error: { type, message } };
  if (session !== 'default') view.session = session;
  if (audit) view.auditLog = audit;
  return { content: [{ type: 'text', text: renderText(view) }], structuredContent: view, isError: true };
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Sends MCP progress notifications while a run goes on, when the client asked for them. */
function startProgress(extra: Extra, toolCalls: () => number, watchTools?: (sink: ToolProgressSink) => () => void) {
  const token = extra._meta?.progressToken;
  const lastLine = new LastLine();
  const started = Date.now();
  // One token, one increasing progress value: the heartbeat's seconds and the relayed
  // progress of proxied tools ("server.tool: message (3/10)") share it.
  let sent = 0;
  const send = (value: number, message: string) => {
    sent = Math.max(value, Math.round((sent + 0.001) * 1000) / 1000);
    void extra
      .sendNotification({ method: 'notifications/progress', params: { progressToken: token!, progress: sent, message } })
      .catch(() => undefined);
  };
  const timer =
    token === undefined
      ? undefined
      : setInterval(() => {
          const seconds = Math.round((Date.now() - started) / 1000);
          send(seconds, progressMessage(seconds, toolCalls(), lastLine.line));
        }, PROGRESS_INTERVAL_MS);
  // A tool's progress is relayed at most every TOOL_PROGRESS_GAP_MS (the latest one wins).
  let pending: string | undefined;
  let lastRelay = 0;
  let relayTimer: NodeJS.Timeout | undefined;
  const flush = () => {
    relayTimer = undefined;
    if (pending === undefined) return;
    lastRelay = Date.now();
    send((Date.now() - started) / 1000, pending);
    pending = undefined;
  };
  const unwatch =
    token === undefined || !watchTools
      ? undefined
      : watchTools((server, tool, progress) => {
          pending = toolProgressMessage(server, tool, progress);
          const wait = lastRelay + TOOL_PROGRESS_GAP_MS - Date.now();
          if (wait <= 0) flush();
          else relayTimer ??= setTimeout(flush, wait);
        });
  return {
    onOutput: (stream: 'stdout' | 'stderr', text: string) => lastLine.add(stream, text),
    stop: () => {
      clearInterval(timer);
      clearTimeout(relayTimer);
      unwatch?.();
    },
  };
}
