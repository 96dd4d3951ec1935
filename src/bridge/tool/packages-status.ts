// What the model is told about Python packages: the one sentence of what the image has (the
// capabilities resource, capability_summary() and import errors say it alike; the listing
// says the same names), and sandbox.packages (built, or not yet and how). The listing is fixed
// when the bridge starts, so the state is looked up then: two or three CLI calls, only when
// packages are configured.
import type { SandboxConfig } from '../../config/schema.ts';
import {
  candidates,
  distributionsText,
  type ImageDistributions,
  locateConfigured,
  packagesState,
  type PackagesState,
  packagesSummary,
} from '../../sandbox/index.ts';

const START_CHECK_TIMEOUT_MS = 10_000;

/** The packages image's state in the first runtime that has the base image; undefined without packages. */
export async function packagesAtStart(sandbox: SandboxConfig): Promise<PackagesState | undefined> {
  if (sandbox.packages.length === 0) return undefined;
  let last: PackagesState | undefined;
  for (const name of candidates(sandbox)) {
    const command = locateConfigured(name, sandbox);
    last = await packagesState(command, sandbox, { timeoutMs: START_CHECK_TIMEOUT_MS }).catch(() => undefined);
    if (last && last.state !== 'no-base') return last;
  }
  return last;
}

/** Names of the installed packages (for the listing): only when the image with them is built. */
export function installedNames(state: PackagesState | undefined): string[] {
  return state?.state === 'built' ? state.packages.map((p) => /^[a-z0-9._-]+/.exec(p)?.[0] ?? p) : [];
}

/** The capabilities resource's paragraph about packages. */
export function packagesText(state: PackagesState | undefined, buildHint: string): string {
  if (!state) {
    return "There is no pip: more packages are the user's to add (sandbox.packages, then a build of the sandbox image).";
  }
  const list = packagesSummary(state.packages, 30);
  if (state.state === 'built')
    return `Python packages installed (sandbox.packages): ${list}. There is no pip: other packages are the user's to add to sandbox.packages.`;
  return `sandbox.packages lists ${list}, but the sandbox image with them is not built${state.state === 'missing' && state.stale.length > 0 ? ' for the current list' : ''}: runs use ${'the base image'} without them. ${buildHint}`;
}

/** How a user builds the packages image where this bridge runs. */
export function buildHintFor(client: string | undefined): string {
  return client === 'vscode'
    ? 'Ask the user to run the VS Code command "Code Execution Mode: Build Sandbox Image".'
    : 'Ask the user to run `code-execution-mode build-image`.';
}

/** What the WebAssembly sandbox has, said wherever a container's packages would be. */
export const WASM_INSTALLED = "Only Pyodide's standard library is installed (the WebAssembly sandbox has no packages).";

/**
 * The one sentence of what Python has installed: the image's distributions, packaging tools
 * left out, the notable ones named first, then a count; told alike by the capabilities
 * resource, capability_summary() and import errors (the listing names the same).
 */
export function installedSentence(found: ImageDistributions | undefined, wasm = false): string {
  if (wasm) return WASM_INSTALLED;
  if (!found || found.names.length + found.more === 0) return 'Only the Python standard library is installed.';
  return `Installed besides the standard library: ${distributionsText(found)}.`;
}

/** What sandboxed code is told of its packages (the host method sandbox_packages). */
export interface PackagesFacts {
  /** installedSentence. */
  installed: string;
  /** Whether the user can add a package with sandbox.packages (a container; not WebAssembly). */
  canAdd: boolean;
}

/** The capabilities resource's line about what the image has; empty while nothing is known of it. */
export function imagePackagesText(found: ImageDistributions | undefined, wasm = false): string {
  return found || wasm ? `Python packages: ${installedSentence(found, wasm)}` : '';
}
