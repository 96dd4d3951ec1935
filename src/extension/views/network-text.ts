// How a run's requests through the sandbox's network proxy, and the questions asked about them,
// are said in the run panel; and which "always" answers this window's extension has to add to
// the user's setting. No `vscode` here, so the unit tests check them. Hosts, methods and reasons
// come from the run log (and first from sandboxed code): escaped.
import type { EgressRecordLine, NetworkQuestionRecord, RunRecord } from '../../state/run-log/reader.ts';
import { escapeHtml as escape } from '../panels/html.ts';
import { sizeText } from '../../shared/byte-size.ts';
import { formatDuration } from '../../shared/durations.ts';
import { plural } from '../../shared/plural.ts';

/** Characters of a refusal's reason shown in the panel (the log keeps up to 2000). */
const MAX_REASON_CHARS = 300;
/** Decisions that let the request through. */
const THROUGH = new Set(['allowed', 'asked']);

/** "api.example.com:443", "[::1]:8080": as sandbox.network.allow writes it. */
export function hostPortText(entry: { host: string; port: number }): string {
  return entry.host.includes(':') ? `[${entry.host}]:${entry.port}` : `${entry.host}:${entry.port}`;
}

function egressRow(r: EgressRecordLine): string {
  const reason = r.reason ? `<div class="error">${escape(r.reason.slice(0, MAX_REASON_CHARS))}</div>` : '';
  const address = r.address && r.address !== r.host ? ` <span class="note">(${escape(r.address)})</span>` : '';
  return (
    `<tr class="${THROUGH.has(r.decision) ? '' : 'bad'}"><td><code>${escape(hostPortText(r))}</code>${address}</td><td><code>${escape(r.method)}</code></td>` +
    `<td>${escape(r.decision)}${reason}</td><td>${escape(sizeText(r.bytesOut))}</td><td>${escape(sizeText(r.bytesIn))}</td>` +
    `<td>${escape(formatDuration(r.durationMs))}</td></tr>`
  );
}

function questionRow(q: NetworkQuestionRecord): string {
  const allowed = q.answer === 'once' || q.answer === 'session' || q.answer === 'always';
  const error = q.error ? `<div class="error">${escape(q.error.slice(0, MAX_REASON_CHARS))}</div>` : '';
  // While it waits: "waiting for your answer", and when it was asked.
  const waited = q.waitedMs === undefined ? '' : ` (${escape(formatDuration(q.waitedMs))})`;
  return (
    `<tr class="${allowed || q.answer === undefined ? '' : 'bad'}"><td><code>${escape(hostPortText(q))}</code></td>` +
    `<td>${escape(q.answer ?? 'waiting for your answer')}${error}</td><td>${escape(new Date(q.time).toLocaleTimeString())}${waited}</td></tr>`
  );
}

/** The run panel's "Network" section body, or '' when the run made no request through the proxy. */
export function networkSection(run: Pick<RunRecord, 'egress' | 'omittedEgress' | 'networkQuestions'>): string {
  const parts: string[] = [];
  if (run.egress.length > 0)
    parts.push(
      `<table class="egress"><thead><tr><th>host</th><th>method</th><th>decision</th><th>sent</th><th>received</th><th>time</th></tr></thead>` +
        `<tbody>${run.egress.map(egressRow).join('')}</tbody></table>`,
    );
  const omitted = run.omittedEgress;
  if (omitted && omitted.count > 0)
    parts.push(
      `<p class="note">${plural(omitted.count, 'more request', 'more requests')} not logged one by one (the run's budget in the log): ` +
        `${Object.entries(omitted.byDecision)
          .map(([decision, n]) => `${escape(decision)} ${n}`)
          .join(', ')}.</p>`,
    );
  if (run.networkQuestions.length > 0)
    parts.push(
      `<h3>Questions</h3><table class="network-questions"><thead><tr><th>host</th><th>answer</th><th>asked</th></tr></thead>` +
        `<tbody>${run.networkQuestions.map(questionRow).join('')}</tbody></table>`,
    );
  return parts.join('');
}

/** An "always" answer of a run: the host to add, and which question it was (for once-only handling). */
export interface AlwaysAnswer {
  /** `host:port`, as sandbox.network.allow takes it. */
  entry: string;
  /** Run id and the answer's time: the same question is never added twice. */
  key: string;
}

/** The "always" answers of runs this window's bridge ran (`owner`), in the order they came. */
export function alwaysAnswers(runs: readonly RunRecord[], owner: string | undefined): AlwaysAnswer[] {
  if (!owner) return [];
  return runs
    .filter((run) => run.owner === owner)
    .flatMap((run) =>
      run.networkQuestions
        .filter((q) => q.answer === 'always')
        .map((q) => ({ entry: hostPortText(q), key: `${run.id}\0${q.time}\0${hostPortText(q)}` })),
    );
}

/** The user's list with `entry` added (unchanged when it is there already, in any case). */
export function withAllowed(list: readonly string[], entry: string): string[] {
  return list.some((item) => item.trim().toLowerCase() === entry.toLowerCase()) ? [...list] : [...list, entry];
}
