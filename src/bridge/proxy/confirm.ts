// Which proxied tool calls ask the user first (per server `confirm` and `confirmTools`), and the
// errors a call that was not confirmed raises (their kinds are ToolError kinds in Python).
import type { ServerConfig } from '../../config/schema.ts';
import type { ToolEntry } from '../catalog/catalog.ts';
import { annotationFlag } from '../catalog/tool-hints.ts';
import type { KindedError } from '../../shared/error-kinds.ts';

/** The user declined, cancelled, or did not answer in time: kind "declined". */
export class ConfirmationDeclinedError extends Error implements KindedError {
  override readonly name = 'ConfirmationDeclinedError';
  readonly kind = 'declined';
}

/** The call needs a confirmation and nobody can be asked: kind "needs-confirmation". */
export class ConfirmationNeededError extends Error implements KindedError {
  override readonly name = 'ConfirmationNeededError';
  readonly kind = 'needs-confirmation';
}

/** Whether a call of this tool asks the user first. */
export function confirmationNeeded(
  config: Pick<ServerConfig, 'confirm' | 'confirmTools'>,
  entry: Pick<ToolEntry, 'tool' | 'annotations'>,
): boolean {
  if ((config.confirmTools ?? []).includes(entry.tool)) return true;
  if (annotationFlag(entry.annotations, 'readOnlyHint')) return false;
  const mode = config.confirm ?? 'destructive';
  return mode === 'all' || (mode === 'destructive' && annotationFlag(entry.annotations, 'destructiveHint'));
}

/** What the hub hands the asker: the call to confirm. */
export interface ConfirmationRequest {
  server: string;
  tool: string;
  title?: string;
  /** The tool's annotations from its server's listing (hints, not checked), shown in the question. */
  annotations?: unknown;
  arguments: Record<string, unknown>;
  timeoutMs: number;
}

/** The settings that let calls of a tool go without asking. */
function withoutAsking(server: string, tool: string): string {
  return `set "confirm": "none" on server "${server}" in the bridge's configuration and leave "${tool}" out of its "confirmTools"`;
}

/** Why a call is refused when nobody can be asked, and the settings that allow it. */
export function noOneToAsk(server: string, tool: string, why: string): string {
  return `calling ${server}.${tool} needs the user's confirmation, and ${why}. To allow it without asking, ${withoutAsking(server, tool)}; or use a client that supports elicitation`;
}

/** Why a call is refused when the question could not show its arguments whole, and what to do instead. */
export function tooLargeToAsk(server: string, tool: string, chars: number, max: number): string {
  return (
    `calling ${server}.${tool} needs the user's confirmation, and its arguments are ${chars} characters as the question shows them (JSON), ` +
    `over the ${max} a confirmation can show whole, so the user could not see what would be sent; the call was not made. ` +
    `Split the work into smaller calls, or, to allow calls of it without asking, ${withoutAsking(server, tool)}`
  );
}
