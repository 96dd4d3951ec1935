// How a run's relayed server requests (roots, elicitation, sampling) are said in the run panel
// and the Runs view's tooltip. No `vscode` here, so the unit tests check the wording. Server
// names, methods and errors come from the run log (and first from proxied servers): escaped.
import type { RelayRecord } from '../../state/run-log/reader.ts';
import { escapeHtml as escape } from '../panels/html.ts';
import { plural } from '../../shared/plural.ts';
import { formatDuration } from '../../shared/durations.ts';

/** Characters of a relay's error shown in the panel (the log keeps up to 2000). */
const MAX_ERROR_CHARS = 500;

/** "answered (accept)", "refused", "timeout". */
function relayOutcome(relay: RelayRecord): string {
  return relay.action ? `${relay.outcome} (${relay.action})` : relay.outcome;
}

/** The rows of the run panel's "Requests from servers" table: server, method, outcome, waited. */
export function relayRows(relays: readonly RelayRecord[]): string {
  return relays
    .map((r) => {
      const bad = r.outcome !== 'answered' || (r.action !== undefined && r.action !== 'accept');
      const error = r.error ? `<div class="error">${escape(r.error.slice(0, MAX_ERROR_CHARS))}</div>` : '';
      return (
        `<tr class="${bad ? 'bad' : ''}"><td><code>${escape(r.server)}</code></td><td><code>${escape(r.method)}</code></td>` +
        `<td>${escape(relayOutcome(r))}${error}</td><td>${escape(formatDuration(r.waitedMs))}</td></tr>`
      );
    })
    .join('');
}

/** The run panel's section body, or '' when the run had none. */
export function relayTable(relays: readonly RelayRecord[]): string {
  if (relays.length === 0) return '';
  return `<table class="relays"><thead><tr><th>server</th><th>method</th><th>outcome</th><th>waited</th></tr></thead><tbody>${relayRows(relays)}</tbody></table>`;
}

/** For the Runs view's tooltip (Markdown): " · 2 requests from servers (1 refused)", or ''. */
export function relaySummary(relays: readonly RelayRecord[]): string {
  if (relays.length === 0) return '';
  const notAnswered = relays.filter((r) => r.outcome !== 'answered').length;
  return ` · ${plural(relays.length, 'request from servers', 'requests from servers')}${notAnswered ? ` (${notAnswered} not answered)` : ''}`;
}
