// The sandbox's network as the bridge answers for it (sandbox.network): each run's EgressHandler.
// `ask` puts "allow the sandbox to reach host:port?" to the bridge's client as a form
// elicitation, the same kind as a tool confirmation, in the same queue (one question at a time
// per bridge), off the run's clock, bounded in time. Its one field is a choice whose first and
// default option is "this request only", so an accept as offered allows one request; "this
// session" and "always" must be picked. Decline, cancel, a timeout and a stopped run are "deny".
// Grants for a session or always hold while the bridge runs (NetworkGrants); "always" is also
// told to onAlways (the VS Code extension adds it to the user's setting from the run log's
// `network-question` line). Each question is on record when it is put (a `network-question` line
// with phase "asked") and when answered. `record` makes each request a line of the run log.
import { ErrorCode, type ElicitRequestFormParams, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { targetText, type EgressAnswer, type EgressHandler, type EgressRecord, type EgressTarget } from '../../sandbox/index.ts';
import type { NetworkAnswer, RunLog } from '../../state/run-log/writer.ts';
import { escapeUnseen, oneLine } from '../../shared/shown-text.ts';
import { CONFIRMATION_PREFIX, type ConfirmationAsker } from './confirmations.ts';
import type { RunCall } from '../run-call.ts';

/** The form's one field: how far the accept reaches. */
export const NETWORK_FIELD = 'allowHostFor';
/** Its first and default option: an accept as offered allows this request and no other. */
export const NETWORK_ONCE = 'this request only';
/** The host for the rest of the run_python session, while the bridge runs. */
export const NETWORK_SESSION = 'this session';
/** The host from now on: the user's sandbox.network.allow gets it (in VS Code; from the command line it holds until the bridge stops). */
export const NETWORK_ALWAYS = 'always (adds it to sandbox.network.allow)';
/** How long a question waits for its answer; no answer is a refusal. */
export const NETWORK_QUESTION_TIMEOUT_MS = 120_000;
/** The question's own words: a relayed question may not use them (relay-imitation.ts). */
const REACH = 'allow the sandbox to reach';
/** Characters of a host name shown (a DNS name has at most 253). */
const MAX_SHOWN_HOST_CHARS = 260;

/** The target as a question shows it: one line, every character that would not show as itself escaped. */
function shownTarget(target: EgressTarget): string {
  return oneLine(escapeUnseen(targetText(target)), MAX_SHOWN_HOST_CHARS);
}

/** The question about one host and port, for code of `session`. */
export function networkQuestion(target: EgressTarget, session: string): ElicitRequestFormParams {
  const where = shownTarget(target);
  const shownSession = oneLine(escapeUnseen(session), 100);
  return {
    mode: 'form',
    message: `${CONFIRMATION_PREFIX}${REACH} ${where}?`,
    requestedSchema: {
      type: 'object',
      properties: {
        // A choice, not a boolean: the first option is the default, so a plain accept allows one request.
        [NETWORK_FIELD]: {
          type: 'string',
          title: `Allow ${where} for`,
          description: `Code in sandbox session "${shownSession}" asked to connect to ${where}. Decline to refuse it.`,
          oneOf: [
            { const: NETWORK_ONCE, title: `this request only; ask again next time` },
            { const: NETWORK_SESSION, title: `this session ("${shownSession}") while the bridge runs` },
            { const: NETWORK_ALWAYS, title: `always: add ${where} to sandbox.network.allow` },
          ],
          default: NETWORK_ONCE,
        },
      },
    },
  };
}

/** The answer an elicitation's result stands for: only an option picked widens it; anything else accepted is once. */
export function networkAnswerOf(result: ElicitResult): EgressAnswer {
  if (result.action !== 'accept') return 'deny';
  const choice = result.content?.[NETWORK_FIELD];
  return choice === NETWORK_SESSION ? 'session' : choice === NETWORK_ALWAYS ? 'always' : 'once';
}

/** The field names of the question: a relayed form may not use them (relay-imitation.ts). */
export function networkQuestionFields(): string[] {
  return [NETWORK_FIELD];
}

/** The question's own words: a relayed question may not use them either. */
export function networkQuestionWording(): string[] {
  return [REACH];
}

/** Thrown to the proxy when nobody can be asked: it refuses the request with this message. */
export class NetworkQuestionUnavailableError extends Error {
  override name = 'NetworkQuestionUnavailable';
}

/**
 * Why nobody can be asked, and what to set instead: short, as the proxy puts it on one line of
 * its refusal (HTTP status text included).
 */
export function noOneToAskAbout(target: EgressTarget): string {
  return (
    `the bridge's client cannot ask (none is connected, or it lacks form elicitation): list "${targetText(target)}" ` +
    'in sandbox.network.allow (VS Code: codeExecutionMode.sandbox.network.allow)'
  );
}

/**
 * Hosts the user allowed for a session or always, while the bridge runs: asked once, not again
 * (a later run of the session, or any session for "always", is not asked about them).
 */
export class NetworkGrants {
  private readonly always = new Set<string>();
  private readonly bySession = new Set<string>();

  /** What was granted for this session and target, if anything. */
  answerFor(session: string, target: EgressTarget): EgressAnswer | undefined {
    const key = targetText(target);
    if (this.always.has(key)) return 'always';
    return this.bySession.has(`${session}\0${key}`) ? 'session' : undefined;
  }

  /**
   * Drops the "always" grants: where the user's setting holds them (VS Code adds each one to
   * sandbox.network.allow), the setting decides from then on, so that removing a host there (Undo) takes it back.
   */
  forgetAlways(): void {
    this.always.clear();
  }

  grant(session: string, target: EgressTarget, answer: EgressAnswer): void {
    const key = targetText(target);
    if (answer === 'always') this.always.add(key);
    else if (answer === 'session') this.bySession.add(`${session}\0${key}`);
  }
}

export interface NetworkQuestionsOptions {
  /** The bridge's client (clientAsker), asked at each question: it may not be connected yet. */
  asker: () => ConfirmationAsker | undefined;
  /** The confirmations' queue: network questions take their turn with tool confirmations. */
  queue: { inTurn<T>(work: () => Promise<T>): Promise<T> };
  grants: NetworkGrants;
  runLog?: RunLog | undefined;
  /** NETWORK_QUESTION_TIMEOUT_MS unless given (tests). */
  timeoutMs?: number;
  /** Told when the user answered "always". */
  onAlways?: (target: EgressTarget) => void;
}

/** What the proxy passes to ask: the contract's context, and the run's clock when it has it. */
type AskContext = Parameters<EgressHandler['ask']>[1] & { untimed?: RunCall['untimed'] };

/**
 * The EgressHandler of one run: `run` is the run's own call context (its signal stops a
 * question; `untimed`, when known, pauses its clock while the user is asked; `session`, its
 * run_python session, which grants and questions name).
 */
export function networkHandler(
  options: NetworkQuestionsOptions,
  run: Pick<RunCall, 'signal' | 'untimed'> & { session?: string },
): EgressHandler {
  const timeoutMs = options.timeoutMs ?? NETWORK_QUESTION_TIMEOUT_MS;
  const log = (context: AskContext, target: EgressTarget, answer: NetworkAnswer, waitedMs: number, error?: string) =>
    options.runLog?.networkQuestion({
      run: context.runId,
      session: context.session,
      host: target.host,
      port: target.port,
      answer,
      waitedMs,
      ...(error ? { error } : {}),
    });

  const question = async (asker: ConfirmationAsker, target: EgressTarget, context: AskContext, signal: AbortSignal) => {
    const asked = performance.now();
    // On record while it waits: the VS Code extension shows that a question waits from this line.
    options.runLog?.networkQuestionAsked({ run: context.runId, session: context.session, host: target.host, port: target.port });
    let result: ElicitResult;
    try {
      result = await asker.ask(networkQuestion(target, context.session), { signal, timeout: timeoutMs });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const timedOut = !signal.aborted && (error as { code?: unknown }).code === ErrorCode.RequestTimeout;
      log(context, target, signal.aborted ? 'stopped' : timedOut ? 'timeout' : 'failed', performance.now() - asked, message);
      return 'deny' as const;
    }
    const answer = networkAnswerOf(result);
    options.grants.grant(context.session, target, answer);
    log(context, target, answer === 'deny' ? (result.action === 'decline' ? 'declined' : 'cancelled') : answer, performance.now() - asked);
    if (answer === 'always') options.onAlways?.(target);
    return answer;
  };

  return {
    async ask(target: EgressTarget, asked: AskContext): Promise<EgressAnswer> {
      // The run's own session when known: a container's proxy may have been started for another name (a spare).
      const context = run.session === undefined ? asked : { ...asked, session: run.session };
      const granted = options.grants.answerFor(context.session, target);
      if (granted) return granted;
      const asker = options.asker();
      if (!asker?.canAsk()) {
        log(context, target, 'no-client', 0);
        throw new NetworkQuestionUnavailableError(noOneToAskAbout(target));
      }
      const signal = AbortSignal.any([context.signal, run.signal]);
      const turn = options.queue.inTurn(async () => {
        // Granted while this question waited for its turn: not asked again.
        const since = options.grants.answerFor(context.session, target);
        if (since) return since;
        if (signal.aborted) {
          log(context, target, 'stopped', 0);
          return 'deny' as const;
        }
        return question(asker, target, context, signal);
      });
      const untimed = context.untimed ?? run.untimed;
      return untimed ? untimed(turn) : turn;
    },
    record(entry: EgressRecord): void {
      const { runId, ...rest } = entry;
      options.runLog?.egress({ run: runId, ...rest });
    },
  };
}
