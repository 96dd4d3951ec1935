// The audit record: append-only JSON lines in the state dir, one event per line, written as a
// run progresses (start, each tool call, end) so a crash loses at most the event in flight.
//
// Several bridges share one state dir (one per VS Code window, command-line runs): how they
// share the file and rotate it is in append-file.ts.
//
// One run cannot push the others out: its tool calls are logged in full up to a count and a
// byte budget, the rest summed up in one `tool-calls-omitted` line. Images go beside the log,
// within a per-run and a total budget (oldest pruned first), and leave with their run's line
// (beside.ts).
import { join } from 'node:path';
import { runLogConfigSchema, type RunLogConfig } from '../../config/schema.ts';
import { redactUrlSecrets } from '../../config/url-secrets.ts';
import type { RunResult } from '../../sandbox/index.ts';
import { AppendFile } from './append-file.ts';
import { dropImagesOf, saveBeside } from './beside.ts';
import type {
  ConfirmationEvent,
  EgressEvent,
  NetworkQuestionAskedEvent,
  NetworkQuestionEvent,
  RelayEvent,
  RunMeter,
  RunStartEvent,
  SandboxTier,
  SnippetSavedEvent,
  SnippetUseEvent,
  ToolCallEvent,
} from './events.ts';
import { RUN_LOG_FILE } from './files.ts';

export { IMAGES_DIR, RUN_LOG_FILE } from './files.ts';
export type {
  ConfirmationAnswer,
  ConfirmationEvent,
  EgressEvent,
  NetworkAnswer,
  NetworkQuestionEvent,
  RelayEvent,
  RunMeter,
  SandboxTier,
  SnippetSavedEvent,
  SnippetUseEvent,
  ToolCallEvent,
} from './events.ts';

const MAX_CODE_CHARS = 1024 * 1024;
const MAX_STREAM_CHARS = 64 * 1024;
const MAX_ARGUMENT_CHARS = 64 * 1024;
/** Distinct server.tool names counted one by one in an omitted-calls summary. */
const MAX_SUMMARY_TOOLS = 50;

/** The limits when none are given: the configuration's defaults. */
export const RUN_LOG_DEFAULTS: RunLogConfig = runLogConfigSchema.parse({});

/** The limits (config/schema.ts says what each one is), and who hears of problems. */
export interface RunLogOptions extends Partial<RunLogConfig> {
  /** Told when writing the log starts failing (with why) and when it works again (undefined). */
  onProblem?: (problem: string | undefined) => void;
  /** The VS Code window this bridge serves, recorded on each run's start (so a window shows its own runs' questions and totals). */
  owner?: string;
}

/**
 * Requests through the network proxy logged one by one per run; the rest are counted in one
 * `egress-omitted` line at the run's end, so that a loop of refused requests cannot flood the log.
 */
export const MAX_EGRESS_RECORDS_PER_RUN = 500;

/** Characters of a snippet's arguments kept in the log. */
export const MAX_SNIPPET_ARGUMENT_CHARS = 300;

/** What one run has used of its budget in the log. */
interface RunBudget {
  calls: number;
  bytes: number;
  /** Once over budget, every later call of the run is only counted. */
  over: boolean;
  omitted: number;
  omittedBytes: number;
  byTool: Map<string, number>;
  byOutcome: Map<string, number>;
}

/** A logged error without the credentials of any URL it quotes (a proxied server's URL, say). */
function errorOf(event: { error?: string }): { error?: string } {
  return event.error === undefined ? {} : { error: redactUrlSecrets(event.error) };
}

function cap(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}... [${text.length - limit} characters not logged]`;
}

function capJson(value: unknown, limit: number): unknown {
  const text = JSON.stringify(value) ?? 'null';
  return text.length <= limit ? value : { truncated: true, preview: text.slice(0, limit) };
}

const round = (ms: number) => Math.round(ms * 10) / 10;

export class RunLog {
  readonly file: string;
  private readonly dir: string;
  private readonly options: RunLogConfig;
  private readonly onProblem: ((problem: string | undefined) => void) | undefined;
  private readonly owner: string | undefined;
  private readonly out: AppendFile;
  private currentProblem: string | undefined;
  /** When each open run started, so that a run that fails before it starts still has a duration. */
  private readonly startedAt = new Map<string, number>();
  private readonly budgets = new Map<string, RunBudget>();
  /** Per run: requests through the network proxy logged, and those only counted (by decision). */
  private readonly egressBudgets = new Map<string, { logged: number; omitted: number; byDecision: Map<string, number> }>();

  constructor(dir: string, options: RunLogOptions = {}) {
    this.dir = dir;
    this.file = join(dir, RUN_LOG_FILE);
    const { onProblem, owner, ...limits } = options;
    this.owner = owner;
    this.options = { ...RUN_LOG_DEFAULTS, ...Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined)) };
    this.onProblem = onProblem;
    this.out = new AppendFile(dir, this.options, (file) => dropImagesOf(this.dir, file, this.options.maxFileBytes));
  }

  /** Why the log is not being written, while it is not; undefined when all is well. */
  get problem(): string | undefined {
    return this.currentProblem;
  }

  /** Opens the log now, so that a state dir that cannot be written is said at start, not at the first run. */
  check(): string | undefined {
    try {
      this.out.open();
      this.setProblem(undefined);
    } catch (error) {
      this.close();
      this.setProblem(`cannot write the run log ${this.file}: ${(error as Error).message}`);
    }
    return this.currentProblem;
  }

  runStarted(event: RunStartEvent): void {
    this.startedAt.set(event.run, performance.now());
    this.budgets.set(event.run, newBudget());
    this.write({
      type: 'run-start',
      time: new Date().toISOString(),
      ...event,
      code: cap(event.code, MAX_CODE_CHARS),
      ...(this.owner ? { owner: this.owner } : {}),
    });
  }

  toolCall(event: ToolCallEvent): void {
    let budget = this.budgets.get(event.run);
    if (!budget) this.budgets.set(event.run, (budget = newBudget()));
    const line = this.line({
      type: 'tool-call',
      time: new Date().toISOString(),
      ...event,
      ...errorOf(event),
      arguments: capJson(event.arguments, MAX_ARGUMENT_CHARS),
      durationMs: round(event.durationMs),
    });
    budget.over ||= budget.calls >= this.options.fullToolCallsPerRun || budget.bytes + line.length > this.options.maxToolCallBytesPerRun;
    if (!budget.over) {
      budget.calls++;
      budget.bytes += line.length;
      this.append(line);
      return;
    }
    budget.omitted++;
    budget.omittedBytes += line.length;
    const name = `${event.server}.${event.tool}`;
    const key = budget.byTool.has(name) || budget.byTool.size < MAX_SUMMARY_TOOLS ? name : '(other tools)';
    budget.byTool.set(key, (budget.byTool.get(key) ?? 0) + 1);
    budget.byOutcome.set(event.outcome, (budget.byOutcome.get(event.outcome) ?? 0) + 1);
  }

  /** A confirmation asked or answered: always logged in full (each one is a question to the user). */
  confirmation(event: ConfirmationEvent): void {
    this.append(
      this.line({
        type: 'confirmation',
        time: new Date().toISOString(),
        ...event,
        ...errorOf(event),
        arguments: capJson(event.arguments, MAX_ARGUMENT_CHARS),
        ...(event.waitedMs !== undefined ? { waitedMs: round(event.waitedMs) } : {}),
      }),
    );
  }

  /** A run_snippet call; logged in full (its arguments are shortened), outside the tool-call budget. */
  snippetUsed(event: SnippetUseEvent): void {
    const args = event.arguments === undefined ? {} : { arguments: cap(event.arguments, MAX_SNIPPET_ARGUMENT_CHARS) };
    this.write({
      type: 'snippet',
      time: new Date().toISOString(),
      ...event,
      name: event.name.slice(0, 64),
      sha256: event.sha256.slice(0, 64),
      ...args,
    });
  }

  /** A run's code saved as a snippet: the run log says which run the snippet came from. */
  snippetSaved(event: SnippetSavedEvent): void {
    this.write({ type: 'snippet-saved', time: new Date().toISOString(), ...event });
  }

  /** A relayed request of a proxied server: always logged (each may be a question to the user). */
  relay(event: RelayEvent): void {
    this.append(
      this.line({
        type: 'relay',
        time: new Date().toISOString(),
        ...event,
        waitedMs: round(event.waitedMs),
        ...(event.error ? { error: cap(redactUrlSecrets(event.error), 2000) } : {}),
      }),
    );
  }

  /** A request through the network proxy, once it ended: logged in full up to MAX_EGRESS_RECORDS_PER_RUN per run, then counted. */
  egress(event: EgressEvent): void {
    let budget = this.egressBudgets.get(event.run);
    if (!budget) this.egressBudgets.set(event.run, (budget = { logged: 0, omitted: 0, byDecision: new Map() }));
    if (budget.logged >= MAX_EGRESS_RECORDS_PER_RUN) {
      budget.omitted++;
      budget.byDecision.set(event.decision, (budget.byDecision.get(event.decision) ?? 0) + 1);
      return;
    }
    budget.logged++;
    this.write({
      type: 'egress',
      time: new Date().toISOString(),
      ...event,
      host: event.host.slice(0, 300),
      method: event.method.slice(0, 32),
      durationMs: round(event.durationMs),
      ...(event.reason ? { reason: cap(redactUrlSecrets(event.reason), 1900) } : {}),
    });
  }

  /** A network question put to the user (sandbox.network.ask): always logged, as its answer is. */
  networkQuestionAsked(event: NetworkQuestionAskedEvent): void {
    this.write({ type: 'network-question', time: new Date().toISOString(), phase: 'asked', ...event, host: event.host.slice(0, 300) });
  }

  /** A network question answered (sandbox.network.ask): always logged (each is a question to the user). */
  networkQuestion(event: NetworkQuestionEvent): void {
    this.write({
      type: 'network-question',
      time: new Date().toISOString(),
      ...event,
      host: event.host.slice(0, 300),
      waitedMs: round(event.waitedMs),
      ...(event.error ? { error: cap(redactUrlSecrets(event.error), 1900) } : {}),
    });
  }

  runEnded(result: RunResult, extra: { toolCalls: number; sandbox?: SandboxTier; meter?: RunMeter }): void {
    this.startedAt.delete(result.runId);
    this.summarizeOmitted(result.runId);
    this.write({
      type: 'run-end',
      time: new Date().toISOString(),
      run: result.runId,
      session: result.session,
      status: result.status,
      durationMs: round(result.durationMs),
      stdout: cap(result.stdout, MAX_STREAM_CHARS),
      stderr: cap(result.stderr, MAX_STREAM_CHARS),
      value: result.value === null ? null : cap(result.value, MAX_STREAM_CHARS),
      error: result.error,
      ...saveBeside(this.dir, result, this.options),
      toolCalls: extra.toolCalls,
      ...(extra.sandbox ? { sandbox: extra.sandbox } : {}),
      truncated: result.truncated,
      sessionLost: result.sessionLost,
      ...(result.sessionChange ? { sessionChange: result.sessionChange } : {}),
      ...(extra.meter ? { meter: extra.meter } : {}),
    });
  }

  /** Also used for failures before a run could start (no runtime, bad image). */
  /** A run no sandbox could run: `type` is the error's name, as the model read it. */
  runFailed(event: { run: string; session: string; type: string; message: string }): void {
    const started = this.startedAt.get(event.run);
    this.startedAt.delete(event.run);
    this.summarizeOmitted(event.run);
    this.write({
      type: 'run-end',
      time: new Date().toISOString(),
      run: event.run,
      session: event.session,
      status: 'error',
      ...(started === undefined ? {} : { durationMs: round(performance.now() - started) }),
      error: { type: event.type, message: redactUrlSecrets(event.message), traceback: '' },
      notRun: true,
    });
  }

  close(): void {
    this.out.close();
  }

  private summarizeOmitted(run: string): void {
    const egress = this.egressBudgets.get(run);
    this.egressBudgets.delete(run);
    if (egress && egress.omitted > 0)
      this.write({
        type: 'egress-omitted',
        time: new Date().toISOString(),
        run,
        count: egress.omitted,
        byDecision: Object.fromEntries(egress.byDecision),
      });
    const budget = this.budgets.get(run);
    this.budgets.delete(run);
    if (!budget || budget.omitted === 0) return;
    this.write({
      type: 'tool-calls-omitted',
      time: new Date().toISOString(),
      run,
      count: budget.omitted,
      bytes: budget.omittedBytes,
      logged: budget.calls,
      byTool: Object.fromEntries(budget.byTool),
      byOutcome: Object.fromEntries(budget.byOutcome),
    });
  }

  private line(event: Record<string, unknown>): Buffer {
    return Buffer.from(`${JSON.stringify(event)}\n`, 'utf8');
  }

  private write(event: Record<string, unknown>): void {
    this.append(this.line(event));
  }

  // Synchronous appends: each event is on disk before the next step of the run, in order.
  private append(line: Buffer): void {
    try {
      this.out.append(line);
      this.setProblem(undefined);
    } catch (error) {
      // The log must never take a run down, but its loss must be seen: the bridge says so
      // loudly and run_python results carry the problem until writing works again.
      this.close();
      this.setProblem(`cannot write the run log ${this.file}: ${(error as Error).message}`);
    }
  }

  private setProblem(problem: string | undefined): void {
    if (problem === this.currentProblem) return;
    this.currentProblem = problem;
    this.onProblem?.(problem);
  }
}

function newBudget(): RunBudget {
  return { calls: 0, bytes: 0, over: false, omitted: 0, omittedBytes: 0, byTool: new Map(), byOutcome: new Map() };
}
