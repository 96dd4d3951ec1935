// The sandbox report as plain text, the same for `doctor`, the output channel and the tests:
// one line per runtime, then one per check (passed, failed, not reached), then the fixes.
import type { Check, RuntimeStatus, SandboxReport } from './detect.ts';
import { isGvisor } from './oci-runtime.ts';
import { CONTAINER_ADVICE } from '../wasm/check.ts';

const STATE_LABELS: Record<RuntimeStatus['state'], string> = {
  ready: 'ready',
  'limits-not-enforced': 'runs, but limits are not enforced',
  'image-missing': 'image missing',
  'start-failed': 'sandbox does not start',
  'daemon-down': 'not running',
  'not-installed': 'not installed',
};

export function stateLabel(state: RuntimeStatus['state']): string {
  return STATE_LABELS[state];
}

const CHECK_LABELS: Record<Check['name'], string> = {
  installed: 'installed',
  engine: 'engine endpoint',
  daemon: 'daemon / machine',
  limits: 'resource limits',
  image: 'image',
  packages: 'packages (sandbox.packages)',
  workspace: 'workspace (read-only)',
  network: 'network (sandbox.network)',
  'oci-runtime': 'OCI runtime (sandbox.ociRuntime)',
  start: 'hardened sandbox starts',
  isolation: 'sandboxes apart from each other',
};

export function checkLabel(name: Check['name']): string {
  return CHECK_LABELS[name];
}

export function reportLines(report: SandboxReport): string[] {
  const lines: string[] = [];
  lines.push(headlineText(report));
  if (report.wasm) {
    lines.push(`WebAssembly: ${report.wasm.ready ? 'ready' : 'NOT ready'}: ${report.wasm.detail}`);
    if (report.wasm.fix) lines.push(`  fix: ${report.wasm.fix}`);
  }
  for (const status of report.runtimes) {
    lines.push(`${status.name}: ${stateLabel(status.state)}${status.command !== status.name ? ` [${status.command}]` : ''}`);
    for (const check of status.checks) {
      const mark = check.ok === true ? 'ok  ' : check.ok === false ? 'FAIL' : '--  ';
      lines.push(`  ${mark} ${checkLabel(check.name)}: ${check.detail}`);
    }
    for (const problem of status.problems) lines.push(`  - ${problem}`);
    for (const fix of status.fixes) {
      const how = fix.command ? `: ${fix.command}` : fix.setting ? `: setting ${fix.setting}` : fix.url ? `: ${fix.url}` : '';
      lines.push(`  fix: ${fix.label}${how}`);
    }
  }
  return lines;
}

/** The report's first line: what runs code here, and why it is not a container when it is not. */
function headlineText(report: SandboxReport): string {
  if (report.chosen) return `Sandbox: ready with ${report.chosen.name}${tierWords(report.chosen)} (image ${report.image})`;
  if (report.wasm?.ready) {
    const why = report.backend === 'wasm' ? 'sandbox.backend is "wasm"' : 'no container runtime can run one here (below)';
    return `Sandbox: ready with WebAssembly (${report.wasm.detail}): ${why}; ${CONTAINER_ADVICE}`;
  }
  return `Sandbox: NOT ready (image ${report.image})`;
}

/** Which isolation the sandboxes get, e.g. " in gVisor (runsc)" or " (OCI runtime runc)"; empty when unknown. */
export function tierWords(status: Pick<RuntimeStatus, 'ociRuntime' | 'defaultOciRuntime'>): string {
  if (status.ociRuntime) return isGvisor(status.ociRuntime) ? ` in gVisor (${status.ociRuntime})` : ` (OCI runtime ${status.ociRuntime})`;
  return status.defaultOciRuntime ? ` (OCI runtime ${status.defaultOciRuntime})` : '';
}
