// Confirmations of proxied tool calls: the question goes to the bridge's MCP client as a form
// elicitation while the Python call waits (off the run's clock, bounded by the server's
// confirmTimeoutSeconds). One question at a time per bridge, in the order the calls came, so
// the calls of an asyncio.gather are asked about one by one. Accepting allows this one call:
// the form's one field is a choice whose first and default option is "this call only", so a
// client that pre-selects or submits the default never grants more. Only its other option,
// picked on purpose, allows the tool for the rest of the run_python session (by name) while the
// bridge runs. The question shows the tool's hints and whole arguments, escaped; arguments too
// large to show are refused, never cut.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ErrorCode, type ElicitRequestFormParams, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import {
  ConfirmationDeclinedError,
  ConfirmationNeededError,
  noOneToAsk,
  tooLargeToAsk,
  type ConfirmationRequest,
} from '../proxy/confirm.ts';
import type { ConfirmationAnswer, RunLog } from '../../state/run-log/writer.ts';
import { escapeUnseen, oneLine } from '../../shared/shown-text.ts';
import type { RunCall } from '../run-call.ts';

/** The bridge's client, as far as confirmations need it. */
export interface ConfirmationAsker {
  /** Whether the client takes form elicitations. */
  canAsk(): boolean;
  ask(params: ElicitRequestFormParams, options: { signal: AbortSignal; timeout: number }): Promise<ElicitResult>;
}

/**
 * Characters of the arguments (as JSON, escapes included) a question shows. The user must see
 * everything that would be sent, so larger arguments are refused rather than cut.
 */
export const MAX_SHOWN_ARGUMENT_CHARS = 4000;

/** The form's one field: how far the accept reaches. */
export const ALLOW_FIELD = 'allowFor';
/** Its first and default option: an accept as offered allows this call and no other. */
export const ALLOW_ONCE = 'this call only';
/** Its other option, the only answer that allows the tool for the rest of the session. */
export const ALLOW_FOR_SESSION = 'this tool for the rest of this session';
/**
 * The field of the form earlier versions asked (a boolean that VS Code showed with "true"
 * pre-selected). An answer in it allows one call at most; relayed forms may not use its name.
 */
const EARLIER_FIELDS = ['forSession'];

/**
 * How the bridge's own confirmation begins. A relayed question always begins with
 * `MCP server "NAME" asks:` (client/relay.ts) and may use neither this form's field names nor
 * its wording, so a proxied server cannot pass its question off as this one.
 */
export const CONFIRMATION_PREFIX = 'Code Execution Mode: ';

/** Sentences of the confirmation that a relayed question may not use either (see confirmationWording). */
const WANTS_TO_CALL = 'wants to call the tool';
const ACCEPT_OR_DECLINE = 'Accept to allow this call; decline to refuse it.';

/** The tool's annotations the question names, as the server set them (hints, not checked). */
const SHOWN_HINTS = [
  ['destructiveHint', 'destructive', 'not destructive'],
  ['readOnlyHint', 'read-only', 'not read-only'],
  ['idempotentHint', 'idempotent', 'not idempotent'],
  ['openWorldHint', 'open-world', 'closed-world'],
] as const;

/** Characters of a tool's name or title (the server's, from its listing) shown in the question. */
const MAX_SHOWN_NAME_CHARS = 100;

/**
 * The arguments as the question shows them: all of them, as JSON, keys and values with every
 * character that would not show as itself (bidi overrides, zero-width, controls) escaped.
 */
export function shownArguments(args: Record<string, unknown>): string {
  return escapeUnseen(JSON.stringify(args) ?? '{}');
}

/** The tool's hints in words, as its server's listing sets them: "destructive, open-world", or a sentence saying there are none. */
export function shownHints(annotations: unknown): string {
  const set = typeof annotations === 'object' && annotations !== null ? (annotations as Record<string, unknown>) : {};
  const words = SHOWN_HINTS.flatMap(([key, yes, no]) => (set[key] === true ? [yes] : set[key] === false ? [no] : []));
  return words.length > 0
    ? `The server's hints about it (its own, not checked): ${words.join(', ')}.`
    : 'The server gives no hints about what it does.';
}

export function questionFor(
  request: ConfirmationRequest,
  session: string,
  shown = shownArguments(request.arguments),
): ElicitRequestFormParams {
  // Name and title come from the server's listing: one line each, capped, so they cannot draw lines of their own.
  const tool = oneLine(request.tool, MAX_SHOWN_NAME_CHARS);
  const title = request.title ? oneLine(request.title, MAX_SHOWN_NAME_CHARS) : '';
  const name = title ? `${request.server}.${tool} ("${title}")` : `${request.server}.${tool}`;
  const qualified = `${request.server}.${tool}`;
  return {
    mode: 'form',
    message:
      `${CONFIRMATION_PREFIX}code running in the sandbox (session "${session}") ${WANTS_TO_CALL} ${name} of MCP server "${request.server}" ` +
      `with these arguments:\n${shown}\n\n${shownHints(request.annotations)}\n\n${ACCEPT_OR_DECLINE} ` +
      `To stop asking about ${qualified} in session "${session}", choose "${ALLOW_FOR_SESSION}".`,
    requestedSchema: {
      type: 'object',
      properties: {
        // A choice, not a boolean: clients show its options in order with the default first,
        // so a plain Enter (or an accept with nothing filled in) allows this call only.
        [ALLOW_FIELD]: {
          type: 'string',
          title: `Allow ${qualified} for`,
          description: `The first allows this call only; the second stops the questions about ${qualified} in session "${session}" while the bridge runs`,
          oneOf: [
            { const: ALLOW_ONCE, title: `allow this call of ${qualified}; ask again next time` },
            { const: ALLOW_FOR_SESSION, title: `do not ask again about ${qualified} in session "${session}"` },
          ],
          default: ALLOW_ONCE,
        },
      },
    },
  };
}

/** Whether an accepted answer allows the tool for the rest of the session: only its exact option does. */
export function allowsForSession(content: ElicitResult['content']): boolean {
  return content?.[ALLOW_FIELD] === ALLOW_FOR_SESSION;
}

/** The confirmation's form as it is now, about no call in particular. */
function sampleQuestion(): ElicitRequestFormParams {
  return questionFor({ server: 's', tool: 't', arguments: {}, timeoutMs: 0 }, 'default');
}

/** The field names of the confirmation's form, and of its earlier form: a relayed form may use none of them (relay.ts). */
export function confirmationFields(): string[] {
  return [...Object.keys(sampleQuestion().requestedSchema.properties), ...EARLIER_FIELDS];
}

/** Wording that marks a question as the confirmation: its prefix, its own sentences, its session option. */
export function confirmationWording(): string[] {
  return [CONFIRMATION_PREFIX, WANTS_TO_CALL, ACCEPT_OR_DECLINE, ALLOW_FOR_SESSION];
}

export class ConfirmationGate {
  private queue: Promise<void> = Promise.resolve();
  /** `session \0 server \0 tool` allowed for the rest of the session. */
  private readonly allowedForSession = new Set<string>();
  private readonly asker: () => ConfirmationAsker | undefined;
  private readonly runLog: RunLog | undefined;

  constructor(asker: () => ConfirmationAsker | undefined, runLog?: RunLog) {
    this.asker = asker;
    this.runLog = runLog;
  }

  /** Resolves when the call may go on; throws ConfirmationDeclinedError or ConfirmationNeededError. */
  async confirm(request: ConfirmationRequest, context: RunCall): Promise<void> {
    const key = `${context.session}\0${request.server}\0${request.tool}`;
    if (this.allowedForSession.has(key)) return;
    const asker = this.asker();
    if (!asker?.canAsk()) {
      this.record(request, context, 'no-client', 0);
      throw new ConfirmationNeededError(
        noOneToAsk(request.server, request.tool, "the bridge's client does not support elicitation (form), so nobody can be asked"),
      );
    }
    const turn = this.inTurn(async () => {
      if (this.allowedForSession.has(key)) return;
      if (context.signal.aborted) throw new ConfirmationDeclinedError('the run stopped before the user was asked');
      await this.ask(asker, request, context, key);
    });
    await (context.untimed ? context.untimed(turn) : turn);
  }

  /**
   * Runs `work` once every question asked before it has been answered: one question at a time
   * per bridge, in the order they came (the network's questions wait their turn here too).
   */
  inTurn<T>(work: () => Promise<T>): Promise<T> {
    const previous = this.queue;
    let done!: () => void;
    this.queue = new Promise<void>((resolve) => (done = resolve));
    return (async () => {
      try {
        await previous;
        return await work();
      } finally {
        done();
      }
    })();
  }

  private async ask(asker: ConfirmationAsker, request: ConfirmationRequest, context: RunCall, key: string): Promise<void> {
    // Arguments the question cannot show whole are refused: what the user allows is what is sent.
    const shown = shownArguments(request.arguments);
    if (shown.length > MAX_SHOWN_ARGUMENT_CHARS) {
      this.record(request, context, 'too-large', 0);
      throw new ConfirmationNeededError(tooLargeToAsk(request.server, request.tool, shown.length, MAX_SHOWN_ARGUMENT_CHARS));
    }
    const asked = performance.now();
    this.runLog?.confirmation({
      run: context.runId,
      server: request.server,
      tool: request.tool,
      arguments: request.arguments,
      phase: 'asked',
    });
    let result: ElicitResult;
    try {
      result = await asker.ask(questionFor(request, context.session, shown), { signal: context.signal, timeout: request.timeoutMs });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const timedOut = !context.signal.aborted && (error as { code?: unknown }).code === ErrorCode.RequestTimeout;
      this.record(
        request,
        context,
        context.signal.aborted ? 'stopped' : timedOut ? 'timeout' : 'failed',
        performance.now() - asked,
        message,
      );
      if (timedOut)
        throw new ConfirmationDeclinedError(
          `no answer to the confirmation of ${request.server}.${request.tool} within ${request.timeoutMs / 1000} s (confirmTimeoutSeconds); the call was not made`,
        );
      throw new ConfirmationDeclinedError(
        `the confirmation of ${request.server}.${request.tool} could not be asked (${message}); the call was not made`,
      );
    }
    if (result.action !== 'accept') {
      this.record(request, context, result.action === 'decline' ? 'declined' : 'cancelled', performance.now() - asked);
      throw new ConfirmationDeclinedError(
        `the user ${result.action === 'decline' ? 'declined' : 'cancelled'} the call of ${request.server}.${request.tool}; it was not made`,
      );
    }
    // Only the session option, chosen, widens the grant; anything else (nothing filled in, the
    // earlier form's `forSession: true`) allows this call only.
    const forSession = allowsForSession(result.content);
    if (forSession) this.allowedForSession.add(key);
    this.record(request, context, forSession ? 'allowed-for-session' : 'allowed-once', performance.now() - asked);
  }

  private record(request: ConfirmationRequest, context: RunCall, answer: ConfirmationAnswer, waitedMs: number, error?: string): void {
    this.runLog?.confirmation({
      run: context.runId,
      server: request.server,
      tool: request.tool,
      arguments: request.arguments,
      phase: 'answered',
      answer,
      waitedMs,
      ...(error ? { error } : {}),
    });
  }
}

/** The bridge's MCP client as the asker: form elicitations, when it declared them. */
export function clientAsker(server: Server): ConfirmationAsker {
  return {
    canAsk: () => server.getClientCapabilities()?.elicitation?.form !== undefined,
    ask: (params, options) => server.elicitInput(params, options),
  };
}
