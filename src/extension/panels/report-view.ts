// The sandbox report as the extension shows it: the status bar's words and the Diagnose
// panel's HTML. Pure (no `vscode`), so the unit tests read exactly what a person sees. The
// panel lists every check by name (passed, failed, or not reached because an earlier one
// failed) and one button per fix; buttons name a fix by position, never carry a command.
import {
  checkLabel,
  CONTAINER_ADVICE,
  type CheckName,
  type Fix,
  type RuntimeStatus,
  type SandboxReport,
  stateLabel,
  tierWords,
} from '../../sandbox/index.ts';
import { escapeHtml as escape, escapeWithCode } from './html.ts';

const ICONS: Record<RuntimeStatus['state'], string> = {
  ready: '$(vm-active)',
  'limits-not-enforced': '$(warning)',
  'image-missing': '$(cloud-download)',
  'start-failed': '$(error)',
  'daemon-down': '$(vm-outline)',
  'not-installed': '$(circle-slash)',
};

/** Shorter words where the report's own would crowd the status bar. */
const SHORT: Partial<Record<RuntimeStatus['state'], string>> = {
  'limits-not-enforced': 'limits not enforced',
  'daemon-down': 'daemon down',
};

/** How close each state is to running a sandbox: when none can, the closest one is shown. */
const CLOSENESS: RuntimeStatus['state'][] = [
  'ready',
  'limits-not-enforced',
  'image-missing',
  'start-failed',
  'daemon-down',
  'not-installed',
];

const CHECK_ORDER: CheckName[] = [
  'installed',
  'engine',
  'daemon',
  'limits',
  'oci-runtime',
  'image',
  'packages',
  'workspace',
  'network',
  'start',
  'isolation',
];

/** The runtime to speak of: the one in use, else the one nearest to working. */
export function headline(report: SandboxReport): RuntimeStatus | undefined {
  if (report.chosen) return report.chosen;
  return [...report.runtimes].sort((a, b) => CLOSENESS.indexOf(a.state) - CLOSENESS.indexOf(b.state))[0];
}

/** The status bar's text, with a codicon, e.g. `$(cloud-download) podman: image missing`. */
export function statusText(report: SandboxReport): string {
  if (!report.chosen && report.wasm?.ready) return '$(vm) WASM sandbox';
  const shown = headline(report);
  if (!shown) return '$(error) Sandbox: check failed';
  // Runs work without the packages (in the base image), but the person should build them.
  if (shown.state === 'ready' && shown.packages?.state === 'missing') return `$(package) ${shown.name}: ${packagesWords(shown)}`;
  // None installed: naming the first one checked would suggest it is the one to fix.
  if (shown.state === 'not-installed') return `${ICONS[shown.state]} Sandbox: no container runtime`;
  return `${ICONS[shown.state]} ${shown.name}: ${SHORT[shown.state] ?? stateLabel(shown.state)}`;
}

/** "packages not built" or "packages stale" (the list or the base image changed since the build). */
export function packagesWords(status: Pick<RuntimeStatus, 'packages'>): string {
  return status.packages?.state === 'missing' && status.packages.stale.length > 0 ? 'packages stale' : 'packages not built';
}

export type Verdict = { tone: 'ok' | 'warn' | 'bad'; text: string };

export function verdict(report: SandboxReport): Verdict {
  const chosen = report.chosen;
  if (chosen?.state === 'ready') return { tone: 'ok', text: `Ready: sandboxes run with ${chosen.name}${tierWords(chosen)}.` };
  if (chosen) return { tone: 'warn', text: `Sandboxes run with ${chosen.name}, but its resource limits are not enforced.` };
  if (report.wasm?.ready) {
    const why = report.backend === 'wasm' ? 'as sandbox.backend asks' : 'since no container runtime can run one here';
    return { tone: 'warn', text: `Ready: sandboxes run in WebAssembly (${report.wasm.detail}), ${why}; ${CONTAINER_ADVICE}.` };
  }
  const shown = headline(report);
  if (!shown) return { tone: 'bad', text: 'Not ready: the sandbox could not be checked (see the output).' };
  return { tone: 'bad', text: `Not ready: run_python cannot start a sandbox (${shown.name}: ${stateLabel(shown.state)}).` };
}

export interface PanelAssets {
  nonce: string;
  cspSource: string;
  styleUri: string;
  scriptUri: string;
  /** Shown above the report while a check or pull is under way; buttons are disabled then. */
  busy?: string | undefined;
  /** sandbox.network in words (config/network-summary.ts networkReport). */
  network?: string | undefined;
}

function checkRows(status: RuntimeStatus): string {
  // The workspace, network, packages and OCI runtime rows only when their setting asks for the check.
  return CHECK_ORDER.filter(
    (name) => !['workspace', 'network', 'packages', 'oci-runtime'].includes(name) || status.checks.some((c) => c.name === name),
  )
    .map((name) => {
      const check = status.checks.find((c) => c.name === name);
      const result = check?.ok === true ? 'passed' : check?.ok === false ? 'failed' : 'not reached';
      const mark = check?.ok === true ? '✓' : check?.ok === false ? '✗' : '–';
      const detail = check && check.ok !== null ? check.detail : check?.detail || 'an earlier check failed';
      return (
        `<tr class="check ${result.replace(' ', '-')}" data-check="${name}" data-result="${result}">` +
        `<td class="mark" aria-hidden="true">${mark}</td><th scope="row">${escape(checkLabel(name))}</th>` +
        `<td class="result">${result}</td><td class="detail">${escapeWithCode(detail)}</td></tr>`
      );
    })
    .join('');
}

function fixButtons(fix: Fix, runtime: number, index: number, disabled: string): string {
  const button = (action: string, label: string, primary = false) =>
    `<button class="${primary ? '' : 'secondary'}" data-action="fix" data-runtime="${runtime}" data-fix="${index}" data-do="${action}"${disabled}>${label}</button>`;
  const buttons: string[] = [];
  if (fix.kind === 'pull') buttons.push(button('pull', 'Pull', true));
  else if (fix.kind === 'build') buttons.push(button('build', 'Build', true));
  else if (fix.command) buttons.push(button('terminal', 'Run in terminal', true));
  if (fix.command) buttons.push(button('copy', 'Copy command'));
  if (fix.setting) buttons.push(button('setting', 'Open setting', true));
  if (fix.url) buttons.push(button('docs', 'Open docs', !fix.setting && !fix.command));
  const what = fix.command
    ? `<code>${escape(fix.command)}</code>`
    : fix.setting
      ? `<code>codeExecutionMode.${escape(fix.setting)}</code>`
      : '';
  return `<li class="fix" data-kind="${fix.kind}"><span class="fix-label">${escape(fix.label)}</span> ${what}<span class="fix-actions">${buttons.join('')}</span></li>`;
}

function runtimeSection(status: RuntimeStatus, index: number, chosen: boolean, disabled: string): string {
  const tone =
    status.state === 'ready' ? 'ok' : status.state === 'limits-not-enforced' || status.state === 'image-missing' ? 'warn' : 'bad';
  const facts = [
    status.command,
    status.version,
    status.rootless === undefined ? '' : status.rootless ? 'rootless' : 'rootful',
    status.cgroupVersion ? `cgroups ${status.cgroupVersion}` : '',
    status.python ? `Python ${status.python} in the image` : '',
  ].filter((fact): fact is string => Boolean(fact));
  const problems = status.problems.length
    ? `<h3>Problems</h3><ul class="problems">${status.problems.map((p) => `<li>${escapeWithCode(p)}</li>`).join('')}</ul>`
    : '';
  const fixes = status.fixes.length
    ? `<h3>Fixes</h3><ul class="fixes">${status.fixes.map((f, i) => fixButtons(f, index, i, disabled)).join('')}</ul>`
    : '';
  return (
    `<section class="runtime" data-runtime="${status.name}" data-state="${status.state}">` +
    `<h2>${status.name} <span class="state ${tone}">${escape(stateLabel(status.state))}</span>${chosen ? ' <span class="in-use">in use</span>' : ''}</h2>` +
    `<p class="facts">${facts.map(escape).join(' · ')}</p>` +
    `<table class="checks"><tbody>${checkRows(status)}</tbody></table>${problems}${fixes}</section>`
  );
}

/** The WebAssembly sandbox, when the backend may use it. */
function wasmSection(report: SandboxReport): string {
  const wasm = report.wasm;
  if (!wasm) return '';
  const inUse = !report.chosen && wasm.ready;
  return (
    `<section class="runtime" data-runtime="wasm" data-state="${wasm.ready ? 'ready' : 'not-ready'}">` +
    `<h2>WebAssembly <span class="state ${wasm.ready ? 'ok' : 'bad'}">${wasm.ready ? 'ready' : 'not ready'}</span>${inUse ? ' <span class="in-use">in use</span>' : ''}</h2>` +
    `<p class="facts">${escapeWithCode(wasm.detail)}</p>` +
    `<p>Python's standard library, no subprocesses, no packages, no workspace folder. ${escape(CONTAINER_ADVICE[0]!.toUpperCase() + CONTAINER_ADVICE.slice(1))}.</p>` +
    (wasm.fix ? `<h3>Fixes</h3><ul class="fixes"><li class="fix">${escapeWithCode(wasm.fix)}</li></ul>` : '') +
    '</section>'
  );
}

/** The whole panel. `report` undefined: the first check is still running. */
export function diagnoseHtml(report: SandboxReport | undefined, assets: PanelAssets): string {
  const disabled = assets.busy ? ' disabled' : '';
  const summary = report ? verdict(report) : { tone: 'busy', text: 'Checking the sandbox…' };
  const body = report
    ? wasmSection(report) +
      (report.runtimes.map((s, i) => runtimeSection(s, i, s.name === report.chosen?.name, disabled)).join('') ||
        (report.wasm ? '' : '<p>No runtime was checked: see the output for the error.</p>'))
    : '';
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${assets.cspSource}; script-src 'nonce-${assets.nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${assets.styleUri}"><title>Sandbox Runtime</title></head>
<body>
<header>
<h1>Sandbox runtime</h1>
<p class="verdict ${summary.tone}" role="status">${escapeWithCode(summary.text)}</p>
${report ? `<p class="image">Image <code>${escape(report.image)}</code></p>` : ''}
${assets.network ? `<p class="network">Network (<code>sandbox.network</code>): ${escape(assets.network)}</p>` : ''}
<div class="actions"><button data-action="checkAgain"${disabled}>Check again</button><button class="secondary" data-action="copyReport"${report ? disabled : ' disabled'}>Copy report</button><button class="secondary" data-action="showOutput">Show output</button></div>
${assets.busy ? `<p class="busy" role="status">${escape(assets.busy)}</p>` : ''}
</header>
${body}
<script nonce="${assets.nonce}" src="${assets.scriptUri}"></script>
</body></html>`;
}
