// Which configuration changes a running bridge applies itself, and which need a new bridge
// (a new sandbox): the VS Code extension restarts its bridge only for the latter, so that
// the agent's Python sessions survive adding a server or changing a proxy limit.
import type { Config } from './schema.ts';

/**
 * Keys (dotted) a running bridge re-reads from its configuration file: the proxied servers,
 * the proxy's limits and timeouts, which workspace servers need consent, how much output
 * a result carries, and the sandbox's network (its proxy reads it at each request). Everything else (sandbox.*, stateDir, runLog, roots...) shapes the
 * sandbox or the bridge's files, and changing it starts a new bridge.
 */
export const LIVE_KEYS: readonly string[] = [
  'servers',
  'proxy',
  'consent.servers',
  'sandbox.resultChars',
  'sandbox.maxOutputChars',
  'sandbox.network',
];

/** The configuration's values by dotted key, two levels deep (`sandbox.memory`, `stateDir`), live keys left out. */
function restartValues(config: Partial<Config>): Map<string, string> {
  const values = new Map<string, string>();
  for (const [key, value] of Object.entries(config)) {
    if (LIVE_KEYS.includes(key) || value === undefined) continue;
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [inner, innerValue] of Object.entries(value as Record<string, unknown>)) {
        const dotted = `${key}.${inner}`;
        if (!LIVE_KEYS.includes(dotted) && innerValue !== undefined) values.set(dotted, JSON.stringify(innerValue));
      }
    } else values.set(key, JSON.stringify(value));
  }
  return values;
}

/** Equal for two configurations exactly when one bridge can serve both (live keys aside). */
export function restartKey(config: Partial<Config>): string {
  return JSON.stringify([...restartValues(config)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The dotted keys whose change needs a new bridge, sorted: what a restart is said to be for. */
export function restartReasons(before: Partial<Config>, after: Partial<Config>): string[] {
  const a = restartValues(before);
  const b = restartValues(after);
  return [...new Set([...a.keys(), ...b.keys()])].filter((key) => a.get(key) !== b.get(key)).sort();
}
