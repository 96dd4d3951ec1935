// What the proxy says when it does not let a request through: one line a Python user reads (in
// the 403's body, and as its status text, which urllib and requests put in their error), naming
// the setting that would change the answer.
import { isIP } from 'node:net';
import { sizeText } from '../../shared/byte-size.ts';
import { clip } from '../../shared/clip.ts';
import { plural } from '../../shared/plural.ts';
import { ADDRESS_CLASS_WORDS } from './addresses.ts';
import type { SpecialAddress } from './policy.ts';
import { targetText } from './target.ts';
import type { EgressDecision, EgressTarget } from './types.ts';

/** A request the proxy answers itself: the decision, the HTTP status and the line that says why. */
export interface Refusal {
  decision: EgressDecision;
  status: number;
  reason: string;
}

const PRODUCT = 'Code Execution Mode';

function refused(decision: EgressDecision, target: EgressTarget, why: string, status = 403): Refusal {
  return { decision, status, reason: `${PRODUCT} refused ${targetText(target)}: ${why}` };
}

/** `"*.example.com"` for a.example.com (a name with a domain of at least two labels), else nothing. */
function wildcardFor(target: EgressTarget): string | undefined {
  if (isIP(target.host)) return undefined;
  const domain = target.host.slice(target.host.indexOf('.') + 1);
  return target.host.includes('.') && domain.includes('.') ? `*.${domain}` : undefined;
}

function addIt(target: EgressTarget): string {
  const wildcard = wildcardFor(target);
  return `Add "${targetText(target)}"${wildcard ? ` (or "${wildcard}")` : ''} to sandbox.network.allow`;
}

export function notListed(target: EgressTarget): Refusal {
  return refused('refused', target, `not in sandbox.network.allow. ${addIt(target)}, or set sandbox.network.ask to ask each time.`);
}

export function userDenied(target: EgressTarget): Refusal {
  return refused(
    'denied',
    target,
    `the user did not allow it. If the code needs it, ask the user to add "${targetText(target)}" to sandbox.network.allow.`,
  );
}

/** The question could not be asked (the client cannot, or the run ended while it waited). */
export function notAsked(target: EgressTarget, why: string): Refusal {
  return refused('denied', target, `not in sandbox.network.allow, and asking failed (${oneLine(why)}). ${addIt(target)}.`);
}

export function specialAddress(target: EgressTarget, found: SpecialAddress): Refusal {
  const words = ADDRESS_CLASS_WORDS[found.kind];
  const exact = `${found.address.includes(':') ? `[${found.address}]` : found.address}:${target.port}`;
  if (isIP(target.host)) {
    return refused(
      'private',
      target,
      `${found.address} is ${words}, reached only when sandbox.network.allow lists it exactly with its port, as "${exact}" (never through a wildcard or an entry without a port).`,
    );
  }
  return refused(
    'private',
    target,
    `the name resolves to ${found.address}, ${words}. Loopback, private and link-local addresses are reached only by the address itself, listed exactly with its port in sandbox.network.allow (as "${exact}"), never through a name.`,
  );
}

export function noRun(target: EgressTarget): Refusal {
  return refused('no-run', target, 'no run of this session is in progress; requests through the proxy belong to a run.');
}

export const cappedRequests = (target: EgressTarget, limit: number) =>
  refused('capped', target, `this run made ${plural(limit, 'request')} through the proxy, the limit of sandbox.network.maxRequestsPerRun.`);

export const cappedConnections = (target: EgressTarget, limit: number) =>
  refused(
    'capped',
    target,
    `${plural(limit, 'connection')} through the proxy are open already, the limit of sandbox.network.maxConnections.`,
  );

export const cappedBytes = (target: EgressTarget, limit: number) =>
  refused('capped', target, `this run moved ${sizeText(limit)} through the proxy, the limit of sandbox.network.maxBytesPerRun.`);

/** The name did not resolve, or no address took the connection: a 502, not a refusal. */
export function failed(target: EgressTarget, why: string): Refusal {
  return { decision: 'failed', status: 502, reason: `${PRODUCT} could not reach ${targetText(target)}: ${oneLine(why)}.` };
}

/** Text of an error on one line, short, in characters a status line may carry. */
export function oneLine(text: string): string {
  return clip(statusText(text).trim(), 200);
}

/** A status line's text: the reason, in printable ASCII (an HTTP status line carries nothing else). */
export function statusText(reason: string): string {
  return reason.replace(/[^\x20-\x7e]+/g, ' ');
}
