// sandbox.network in words, the same wherever it is said: run_python's listing (a few words),
// the bridge's instructions and capabilities (one line naming the hosts), and the reports of
// doctor and Diagnose.
import type { SandboxConfig } from './schema.ts';

type Network = SandboxConfig['network'];

/** Characters of the hosts named in one line; the rest are counted. */
const MAX_HOSTS_CHARS = 200;

/** Whether sandboxed code can reach anything: a host listed, or a question to ask. */
export function networkOn(network: Network | undefined): boolean {
  return network !== undefined && (network.allow.length > 0 || network.ask);
}

/** The listing's words: "no network", "network: listed hosts only", "network: asks per host". */
export function networkListingWords(network: Network | undefined): string {
  if (!networkOn(network)) return 'no network';
  return network!.ask ? 'network: asks per host' : 'network: listed hosts only';
}

/** "api.example.com:443, *.pypi.org and 3 more", within MAX_HOSTS_CHARS. */
function hostsText(allow: readonly string[]): string {
  let text = '';
  for (const [i, host] of allow.entries()) {
    const next = `${i > 0 ? ', ' : ''}${host}`;
    if (text.length + next.length > MAX_HOSTS_CHARS) return `${text} and ${allow.length - i} more`;
    text += next;
  }
  return text;
}

/**
 * One line for the model: which hosts the sandbox may reach, and whether others are asked
 * about; '' without a network (the text around it says so).
 */
export function networkLine(network: Network | undefined): string {
  if (!networkOn(network)) return '';
  const { allow, ask } = network!;
  const listed = allow.length > 0 ? `only ${hostsText(allow)}` : 'no host without asking';
  const others = ask ? '; any other host waits for the user to allow it' : '; other hosts are refused (HTTP 403)';
  return `Network (HTTP and HTTPS through the bridge's proxy): ${listed}${others}.`;
}

/** For doctor and Diagnose: "none", or the hosts, whether it asks, and the caps. */
export function networkReport(network: Network | undefined): string {
  if (!networkOn(network)) return 'none (sandbox.network.allow is empty and ask is off)';
  const { allow, ask, maxRequestsPerRun, maxBytesPerRun, maxConnections } = network!;
  const hosts = allow.length > 0 ? `${hostsText(allow)}` : 'no host listed';
  return `${hosts}${ask ? '; asks about other hosts' : ''} (per run: ${maxRequestsPerRun} requests, ${bytesText(maxBytesPerRun)}; ${maxConnections} connections at once)`;
}

function bytesText(bytes: number): string {
  const mib = 1024 * 1024;
  return bytes >= mib && bytes % mib === 0 ? `${bytes / mib} MiB` : `${bytes} bytes`;
}
