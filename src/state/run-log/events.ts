// The run log's events, defined once: the writer's types are inferred from these schemas and the
// reader parses lines with them. A line is an event plus its `type` and `time`. Where the
// writer picks a word from a list (an outcome, a phase, an answer), the line schema reads any
// string, so a log written by an older or newer bridge still reads; everything else a line may
// lack in old logs is optional here.
import { z } from 'zod';
import { outFilePath } from '../../shared/out-names.ts';

export const TOOL_CALL_OUTCOMES = ['ok', 'tool-error', 'denied', 'declined', 'failed'] as const;
/** How a confirmation ended (see bridge/client/confirmations.ts). */
export const CONFIRMATION_ANSWERS = [
  'allowed-once',
  'allowed-for-session',
  'declined',
  'cancelled',
  'timeout',
  'no-client',
  'too-large',
  'stopped',
  'failed',
] as const;
export const RELAY_OUTCOMES = ['answered', 'refused', 'failed', 'timeout', 'cancelled'] as const;
/** How a request through the sandbox's network proxy was decided (sandbox/egress/types.ts EgressDecision). */
export const EGRESS_DECISIONS = ['allowed', 'asked', 'refused', 'denied', 'private', 'capped', 'no-run', 'failed'] as const;
/** How a network question ended (see bridge/client/network-questions.ts). */
export const NETWORK_ANSWERS = ['once', 'session', 'always', 'declined', 'cancelled', 'timeout', 'no-client', 'stopped', 'failed'] as const;

// As the bridge writes them (snippets.ts): anything else in these fields is not from a bridge.
const snippetName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/);
const hexHash = z.string().regex(/^[0-9a-f]{1,64}$/);

export const runStartEventSchema = z.object({
  run: z.string(),
  session: z.string(),
  code: z.string(),
  timeoutMs: z.number(),
  /** The VS Code window whose bridge ran it (the id the extension gives its bridge); absent for other launchers and older bridges. */
  owner: z.string().max(200).optional(),
});
export type RunStartEvent = z.infer<typeof runStartEventSchema>;

export const toolCallEventSchema = z.object({
  run: z.string(),
  server: z.string(),
  tool: z.string(),
  arguments: z.unknown(),
  outcome: z.enum(TOOL_CALL_OUTCOMES),
  durationMs: z.number(),
  error: z.string().optional(),
});
export type ToolCallEvent = z.infer<typeof toolCallEventSchema>;

export type ConfirmationAnswer = (typeof CONFIRMATION_ANSWERS)[number];

/** A confirmation asked of the user, then its answer: one `confirmation` line each. */
export const confirmationEventSchema = z.object({
  run: z.string(),
  server: z.string(),
  tool: z.string(),
  arguments: z.unknown(),
  phase: z.enum(['asked', 'answered']),
  answer: z.enum(CONFIRMATION_ANSWERS).optional(),
  waitedMs: z.number().optional(),
  error: z.string().optional(),
});
export type ConfirmationEvent = z.infer<typeof confirmationEventSchema>;

/** A snippet a run ran with run_snippet: which one (folder, hash of its source) and its arguments, shortened. */
export const snippetUseEventSchema = z.object({
  run: z.string(),
  name: snippetName,
  origin: z.enum(['user', 'workspace']),
  /** The first hex digits of the SHA-256 of the source that was sent into the sandbox. */
  sha256: hexHash,
  arguments: z.string().max(2000).optional(),
});
export type SnippetUseEvent = z.infer<typeof snippetUseEventSchema>;

/** A run's code saved as a snippet (by the editor): the run it came from and the file written. */
export const snippetSavedEventSchema = z.object({ run: z.string(), name: snippetName, sha256: hexHash });
export type SnippetSavedEvent = z.infer<typeof snippetSavedEventSchema>;

/** Where a run ran: the container runtime and the isolation tier (gVisor, or a plain container under the OCI runtime named), or the WebAssembly sandbox (runtime "deno", isolation "wasm"). */
export const sandboxTierSchema = z.object({
  runtime: z.string(),
  isolation: z.enum(['gVisor', 'container', 'wasm']),
  ociRuntime: z.string().optional(),
});
export type SandboxTier = z.infer<typeof sandboxTierSchema>;

/**
 * A proxied server's request to the bridge's client (roots, elicitation, sampling, a URL
 * elicitation a tool call asked for), relayed or refused: one `relay` line each. It belongs to
 * every run with a call of that server in flight, or to none (at connect).
 */
export const relayEventSchema = z.object({
  server: z.string(),
  method: z.string(),
  /** The runs with a call of that server in flight (whose clock the wait paused). */
  runs: z.array(z.string()).max(1000),
  outcome: z.enum(RELAY_OUTCOMES),
  /** An elicitation's answer (accept, decline, cancel). */
  action: z.string().optional(),
  waitedMs: z.number(),
  /** Why it was refused, failed or cancelled. */
  error: z.string().optional(),
  /** Refusals this one record stands for (grouped, see bridge/client/relay-refusals.ts). */
  count: z.number().optional(),
});
export type RelayEvent = z.infer<typeof relayEventSchema>;

/**
 * One request of sandboxed code through the bridge's network proxy (sandbox.network), once it
 * ended: where to, how it was decided, the bytes each way and how long it took.
 */
export const egressEventSchema = z.object({
  run: z.string(),
  host: z.string().max(300),
  port: z.number(),
  /** The method of a plain-HTTP request; CONNECT for a tunnel (HTTPS). */
  method: z.string().max(32),
  /** The address connected to, when one was. */
  address: z.string().max(64).optional(),
  decision: z.enum(EGRESS_DECISIONS),
  bytesOut: z.number(),
  bytesIn: z.number(),
  durationMs: z.number(),
  /** Why it was refused or failed. */
  reason: z.string().max(2000).optional(),
});
export type EgressEvent = z.infer<typeof egressEventSchema>;

/** Requests of a run through the network proxy beyond its budget in the log: counted, not logged one by one. */
export const egressOmittedEventSchema = z.object({
  run: z.string(),
  count: z.number(),
  byDecision: z.record(z.string(), z.number()).optional(),
});
export type EgressOmittedEvent = z.infer<typeof egressOmittedEventSchema>;

export type NetworkAnswer = (typeof NETWORK_ANSWERS)[number];

/** A question to the user about a host the sandbox asked to reach (sandbox.network.ask), once answered. */
export const networkQuestionEventSchema = z.object({
  run: z.string(),
  session: z.string(),
  host: z.string().max(300),
  port: z.number(),
  answer: z.enum(NETWORK_ANSWERS),
  waitedMs: z.number(),
  error: z.string().max(2000).optional(),
});
export type NetworkQuestionEvent = z.infer<typeof networkQuestionEventSchema>;
/** The same question as it is put to the user: a line with `phase: 'asked'` and no answer yet (while it waits, VS Code says so). */
export type NetworkQuestionAskedEvent = Pick<NetworkQuestionEvent, 'run' | 'session' | 'host' | 'port'>;

/** Tool calls of a run beyond its budget in the log: counted, not logged one by one. */
export const toolCallsOmittedEventSchema = z.object({
  run: z.string(),
  count: z.number(),
  bytes: z.number().optional(),
  logged: z.number().optional(),
  byTool: z.record(z.string(), z.number()).optional(),
  byOutcome: z.record(z.string(), z.number()).optional(),
});

const errorSchema = z.object({ type: z.string(), message: z.string(), traceback: z.string().optional() }).nullable();

const imageSchema = z.object({
  mime: z.string(),
  bytes: z.number(),
  file: z
    .string()
    .regex(/^images\/[A-Za-z0-9-]+\.(png|jpg|gif|webp)$/)
    .optional(),
  skipped: z.string().optional(),
});

/** A file the run left in /work/out, saved beside the images (`file`) unless a cap kept it back. */
const outFileSchema = z.object({
  // Cleaned again: a log written before names were cleaned may hold a forged or escaping one.
  path: z.string().transform(outFilePath),
  bytes: z.number(),
  file: z
    .string()
    .regex(/^images\/[A-Za-z0-9-]+-out-[0-9]+\.dat$/)
    .optional(),
  skipped: z.string().optional(),
});

/**
 * The token meter of a run, computed by the bridge where the data is (bridge/results/meter.ts):
 * what the model was handed, what of the proxied tools' results stayed in the sandbox, and what
 * listing the tools it used directly would have cost. Tokens are estimated (`tokenizer` names how).
 */
export const runMeterSchema = z.object({
  /** Characters of the result's text the model was handed, and its tokens. */
  modelChars: z.number(),
  modelTokens: z.number(),
  /** Bytes (JSON, UTF-8) of the proxied tools' results the code received. */
  toolResultBytes: z.number(),
  /** Of those, bytes that did not reach the model: at least the results' bytes less the text's. */
  keptBytes: z.number(),
  /** Distinct proxied tools the run called, and the tokens of their name, description and inputSchema as tools/list shows them. */
  toolsUsed: z.number(),
  listingTokens: z.number(),
  /** How tokens were counted (shared/token-estimate.ts). */
  tokenizer: z.string(),
});
export type RunMeter = z.infer<typeof runMeterSchema>;

/** A run's end (or a failure before it could start, with only status and error). */
export const runEndEventSchema = z.object({
  run: z.string(),
  session: z.string(),
  status: z.string(),
  durationMs: z.number().optional(),
  stdout: z.string().optional(),
  stderr: z.string().optional(),
  value: z.string().nullable().optional(),
  error: errorSchema.optional(),
  images: z.array(imageSchema).optional(),
  files: z.array(outFileSchema).optional(),
  toolCalls: z.number().optional(),
  truncated: z.boolean().optional(),
  sessionLost: z.boolean().optional(),
  sessionChange: z.object({ kind: z.string(), reason: z.string() }).optional(),
  /** No sandbox could run the code (none started): `error` says why, under the name the model read too. */
  notRun: z.boolean().optional(),
  sandbox: sandboxTierSchema.extend({ isolation: z.string() }).optional(),
  /** Absent from logs of older bridges and from runs no sandbox could run; one this reader cannot read is left out, not the line. */
  meter: runMeterSchema.optional().catch(undefined),
});

const time = z.string();
/** A word from a list, read back: any string (see the top of this file). */
const word = z.string();

/** Every line of the log, as the reader accepts it. */
export const runLogLineSchema = z.discriminatedUnion('type', [
  // timeoutMs: absent from logs of older bridges.
  runStartEventSchema.extend({ type: z.literal('run-start'), time, timeoutMs: z.number().optional() }),
  toolCallEventSchema.extend({ type: z.literal('tool-call'), time, outcome: word }),
  confirmationEventSchema.extend({ type: z.literal('confirmation'), time, phase: word, answer: word.optional() }),
  snippetUseEventSchema.extend({ type: z.literal('snippet'), time }),
  snippetSavedEventSchema.extend({ type: z.literal('snippet-saved'), time }),
  relayEventSchema.extend({ type: z.literal('relay'), time, outcome: word }),
  toolCallsOmittedEventSchema.extend({ type: z.literal('tool-calls-omitted'), time }),
  egressEventSchema.extend({ type: z.literal('egress'), time, decision: word }),
  egressOmittedEventSchema.extend({ type: z.literal('egress-omitted'), time }),
  // An asked line (phase 'asked') has no answer nor wait; an answered one has no phase (as older bridges wrote it).
  networkQuestionEventSchema.extend({
    type: z.literal('network-question'),
    time,
    phase: word.optional(),
    answer: word.optional(),
    waitedMs: z.number().optional(),
  }),
  runEndEventSchema.extend({ type: z.literal('run-end'), time }),
]);

export type RunLogEvent = z.infer<typeof runLogLineSchema>;
