// The seam between the bridge and whatever runs the code. The bridge, its results, the run log
// and the views see only this; the container sandbox (sessions/manager.ts) is one kind behind
// it, and another kind slots in by implementing it.
//
// The seam's operations: start (a session starts on its first run; prewarm starts a spare
// ahead), run (execute), interrupt (execute's signal, and its time limit), reset (execute's
// `reset`), close (closeSession, close), check (check: whether and how a sandbox runs here).
import type { RuntimeName } from '../config/schema.ts';
import type { RuntimeStatus } from './engines/detect.ts';
import type { PackagesState } from './image/derived.ts';
import type { ImageDistributions } from './image/distributions.ts';
import type { ExecuteOptions, SessionInfo } from './sessions/manager.ts';
import type { RunResult, SessionChange } from './sessions/run-result.ts';

/** Which sandbox runs the code, for the run log, the listing and the views. */
export interface SandboxTier {
  /** The container runtime, or "deno" for the WebAssembly sandbox. */
  runtime: RuntimeName | 'deno';
  isolation: 'gVisor' | 'container' | 'wasm';
  ociRuntime?: string;
}

/**
 * What runs the code, once chosen (sandbox.backend): a container runtime, or WebAssembly, with
 * why no container was used when the choice was "auto".
 */
export type SandboxEngine = { kind: 'container'; runtime: RuntimeStatus } | { kind: 'wasm'; whyNotContainer?: string };

export interface Sandbox {
  /**
   * Runs code in a named session, started on first use. Never rejects for what the code did
   * (errors, timeouts, cancellation and a lost session are in the result); rejects only when
   * no sandbox can run (with an error that says why and how to fix it).
   */
  execute(code: string, options?: ExecuteOptions): Promise<RunResult>;
  /** Starts a spare ahead of a first run, so that it starts warm. */
  prewarm(): Promise<void>;
  /** Ends one session; false when there was none. */
  closeSession(name: string): Promise<boolean>;
  /** Ends every session and everything that ran them. */
  close(): Promise<void>;
  /** Which sandbox runs code here, and how (the checks doctor shows); chosen once. */
  check(): Promise<SandboxEngine>;
  list(): SessionInfo[];
  /** The sandbox in use, once a run has started one. */
  tier(): SandboxTier | undefined;
  /** sandbox.packages in the image runs use, once known. */
  packages(): PackagesState | undefined;
  /** Looks again for a packages image that was missing. */
  recheckPackages(): Promise<PackagesState | undefined>;
  /** The third-party distributions of the image new sessions use, once a sandbox started. */
  imageDistributions(): ImageDistributions | undefined;
  /** New interpreters run `code` first; live ones that ran an older prelude run `update` before their next run. */
  setPrelude(code: string, update: string): void;
  /** Sessions of these names that a run has not started yet say, on their first run, that their state is gone and why. */
  markReset(names: readonly string[], change: SessionChange): void;
}
