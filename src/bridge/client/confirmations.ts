// Confirmations of proxied tool calls: the question goes to the bridge's MCP client as a form
// elicitation while the Python call waits (off the run's clock, bounded by the server's
// confirmTimeoutSeconds). One question at a time per bridge, in the order the calls came, so
// the calls of an asyncio.gather are asked about one by one. "For the rest of this session"
// is remembered per run_python session (by name) for as long as the bridge runs. The question
// shows the whole arguments, escaped; arguments too large to show are refused, never cut.
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

export const FOR_SESSION_FIELD = 'forSession';

/**
 * How the bridge's own confirmation begins. A relayed question always begins with
 * `MCP server "NAME" asks:` (client/relay.ts) and may use neither this form's field names nor
 * its wording, so a proxied server cannot pass its question off as this one.
 */
export const CONFIRMATION_PREFIX = 'Code Execution Mode: ';

/** Sentences of the confirmation that a relayed question may not use either (see confirmationWording). */
const WANTS_TO_CALL = 'wants to call the tool';
const ACCEPT_OR_DECLINE = 'Accept to allow this call; decline to refuse it.';

/** Characters of a tool's name or title (the server's, from its listing) shown in the question. */
const MAX_SHOWN_NAME_CHARS = 100;

/**
 * The arguments as the question shows them: all of them, as JSON, keys and values with every
 * character that would not show as itself (bidi overrides, zero-width, controls) escaped.
 */
export function shownArguments(args: Record<string, unknown>): string {
  return escapeUnseen(JSON.stringify(args) ?? '{}');
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
  return {
    mode: 'form',
    message:
      `${CONFIRMATION_PREFIX}code running in the sandbox (session "${session}") ${WANTS_TO_CALL} ${name} of MCP server "${request.server}" ` +
      `with these arguments:\n${shown}\n\n${ACCEPT_OR_DECLINE}`,
    requestedSchema: {
      type: 'object',
      properties: {
        [FOR_SESSION_FIELD]: {
          type: 'boolean',
          title: 'Allow this tool for the rest of this session',
          description: `Do not ask again about ${request.server}.${tool} in session "${session}" while the bridge runs`,
          default: false,
        },
      },
    },
  };
}

/** The confirmation's form as it is now, about no call in particular. */
function sampleQuestion(): ElicitRequestFormParams {
  return questionFor({ server: 's', tool: 't', arguments: {}, timeoutMs: 0 }, 'default');
}

/** The field names of the confirmation's form: a relayed form may use none of them (relay.ts). */
export function confirmationFields(): string[] {
  return Object.keys(sampleQuestion().requestedSchema.properties);
}

/** Wording that marks a question as the confirmation: its prefix, its own sentences, its fields' titles. */
export function confirmationWording(): string[] {
  const titles = Object.values(sampleQuestion().requestedSchema.properties).flatMap((field) => (field.title ? [field.title] : []));
  return [CONFIRMATION_PREFIX, WANTS_TO_CALL, ACCEPT_OR_DECLINE, ...titles];
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
    // One question at a time, in the order the calls came.
    const previous = this.queue;
    let done!: () => void;
    this.queue = new Promise<void>((resolve) => (done = resolve));
    const turn = async (): Promise<void> => {
      try {
        await previous;
        if (this.allowedForSession.has(key)) return;
        if (context.signal.aborted) throw new ConfirmationDeclinedError('the run stopped before the user was asked');
        await this.ask(asker, request, context, key);
      } finally {
        done();
      }
    };
    await (context.untimed ? context.untimed(turn()) : turn());
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
    const forSession = result.content?.[FOR_SESSION_FIELD] === true;
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
