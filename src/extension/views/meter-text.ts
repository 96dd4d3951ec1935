// How the token meter is said in the Runs view's tooltip, the run panel and the Tools view: the
// figures the bridge wrote into each run's record (bridge/results/meter.ts), and their totals
// per session since this window started. No `vscode` here, so the unit tests check the wording.
import type { RunMeter, RunRecord } from '../../state/run-log/reader.ts';
import { sizeText } from '../../shared/byte-size.ts';
import { plural } from '../../shared/plural.ts';
import { TOKEN_ESTIMATE_TEXT } from '../../shared/token-estimate.ts';

/** How the figures are counted, in one short line beside them (docs/vscode.md says more). */
export const METER_METHOD = `≈: ${TOKEN_ESTIMATE_TEXT}. Stayed in the sandbox: the tool results' bytes less the model's text, so at least that.`;

/** "1 token", "1,234 characters": a count with thousands separators and its noun. */
function counted(n: number, noun: string): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? noun : `${noun}s`}`;
}

/**
 * The three figures of a run's meter, each as a short phrase; of totals (`summed`), the listing
 * is the sum of each run's (a direct listing is paid again in every request).
 */
export function meterPhrases(meter: Omit<RunMeter, 'tokenizer'>, summed = false): { model: string; kept: string; listing: string } {
  return {
    model: `the model got ${counted(meter.modelChars, 'character')} ≈ ${counted(meter.modelTokens, 'token')}`,
    kept:
      meter.toolResultBytes === 0
        ? 'no tool results'
        : `${sizeText(meter.keptBytes)} of ${sizeText(meter.toolResultBytes)} of tool results stayed in the sandbox`,
    listing:
      meter.toolsUsed === 0
        ? 'no tools called'
        : summed
          ? `direct listings of the tools used ≈ ${counted(meter.listingTokens, 'token')}`
          : `a direct listing of the ${plural(meter.toolsUsed, 'tool')} used ≈ ${counted(meter.listingTokens, 'token')}`,
  };
}

/** A run's meter in one line: "the model got 1,234 characters ≈ 310 tokens · 40 KiB of 45 KiB ... · a direct listing ...". */
export function meterLine(meter: Omit<RunMeter, 'tokenizer'>, summed = false): string {
  const { model, kept, listing } = meterPhrases(meter, summed);
  return [model, kept, listing].join(' · ');
}

/** Metered runs added up. `toolsUsed` sums each run's own count (a direct listing is paid in every request). */
export interface MeterTotals extends Omit<RunMeter, 'tokenizer'> {
  runs: number;
}

function add(total: MeterTotals, meter: RunMeter): void {
  total.runs++;
  total.modelChars += meter.modelChars;
  total.modelTokens += meter.modelTokens;
  total.toolResultBytes += meter.toolResultBytes;
  total.keptBytes += meter.keptBytes;
  total.toolsUsed += meter.toolsUsed;
  total.listingTokens += meter.listingTokens;
}

const empty = (): MeterTotals => ({
  runs: 0,
  modelChars: 0,
  modelTokens: 0,
  toolResultBytes: 0,
  keptBytes: 0,
  toolsUsed: 0,
  listingTokens: 0,
});

/** The totals of the metered runs started at or after `since` (an ISO time): all of them, and per session, sessions by name. */
export function meterTotals(
  runs: readonly RunRecord[],
  since: string,
  owner?: string,
): { all: MeterTotals; sessions: Array<[string, MeterTotals]> } {
  const all = empty();
  const sessions = new Map<string, MeterTotals>();
  for (const run of runs) {
    if (!run.meter || run.started < since || (owner !== undefined && run.owner !== owner)) continue;
    add(all, run.meter);
    let session = sessions.get(run.session);
    if (!session) sessions.set(run.session, (session = empty()));
    add(session, run.meter);
  }
  return { all, sessions: [...sessions].sort(([a], [b]) => a.localeCompare(b)) };
}

/** A total in a few words, for a row's description: "3 runs · model ≈ 930 tokens · 131 KiB stayed · listing ≈ 940 tokens". */
export function totalsShort(total: MeterTotals): string {
  return [
    plural(total.runs, 'run'),
    `model ≈ ${counted(total.modelTokens, 'token')}`,
    `${sizeText(total.keptBytes)} stayed`,
    `listing ≈ ${counted(total.listingTokens, 'token')}`,
  ].join(' · ');
}

/** A total in one line: "3 runs · the model got ... · ... · ...". */
export function totalsLine(total: MeterTotals): string {
  return `${plural(total.runs, 'run')} · ${meterLine(total, true)}`;
}
