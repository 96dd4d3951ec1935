// When the walkthrough's steps are done, from what the extension knows: a runtime that answers,
// the image present in it, a server configured, a run in the log. Each is a context key that
// the step's completionEvents name (onContext:...). No `vscode` here.
import type { SandboxReport } from '../sandbox/index.ts';

export const WALKTHROUGH_KEYS = {
  runtimeReady: 'codeExecutionMode.walkthrough.runtimeReady',
  imagePresent: 'codeExecutionMode.walkthrough.imagePresent',
  hasServers: 'codeExecutionMode.walkthrough.hasServers',
  hasRuns: 'codeExecutionMode.walkthrough.hasRuns',
} as const;

/**
 * The step each key completes, by the id VS Code gives it (extension#walkthrough#step). The key
 * alone is not enough: VS Code registers the walkthrough when it is first needed (opened, or a
 * welcome page), and a step whose key was already true by then is never marked done. So the
 * step is also marked done by id (`welcome.markStepComplete`), which VS Code keeps.
 */
export const WALKTHROUGH_STEP_IDS: Record<keyof typeof WALKTHROUGH_KEYS, string> = {
  runtimeReady: 'code-execution-mode.code-execution-mode#codeExecutionMode.start#runtime',
  imagePresent: 'code-execution-mode.code-execution-mode#codeExecutionMode.start#image',
  hasServers: 'code-execution-mode.code-execution-mode#codeExecutionMode.start#servers',
  hasRuns: 'code-execution-mode.code-execution-mode#codeExecutionMode.start#try',
};

/**
 * A runtime is ready when one is installed and its daemon (if any) answers; the image when a
 * runtime has it. The WebAssembly sandbox in use does both steps: it needs neither.
 */
export function sandboxSteps(report: SandboxReport): { runtimeReady: boolean; imagePresent: boolean } {
  const wasm = !report.chosen && report.wasm?.ready === true;
  const runtimeReady = wasm || report.runtimes.some((r) => r.state !== 'not-installed' && r.state !== 'daemon-down');
  const imagePresent = wasm || report.runtimes.some((r) => r.checks.some((c) => c.name === 'image' && c.ok === true));
  return { runtimeReady, imagePresent };
}
