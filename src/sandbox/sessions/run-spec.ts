// What a run is asked with (the caller's options, and what its session adds: the container, the
// code, the config) and what it hands back to its session.
import type { SandboxConfig } from '../../config/schema.ts';
import type { Kernel } from '../protocol/kernel-process.ts';
import type { RunResult } from './run-result.ts';
import type { RefusedRequest, RequestHandler } from './run-requests.ts';
import type { EgressHandler } from '../egress/types.ts';

export interface RunOptions {
  /** The run's id, when the caller wants to know it up front (for logs). */
  runId?: string;
  timeoutMs: number;
  signal?: AbortSignal;
  onOutput?: (stream: 'stdout' | 'stderr', text: string) => void;
  onRequest?: RequestHandler;
  /** Told of every request refused because its run had ended (for the audit record). */
  onRefusedRequest?: (refused: RefusedRequest) => void;
  /** Asks about and records the run's requests through its container's egress proxy (sandbox.network). */
  egress?: EgressHandler;
}

export interface TrackedRun {
  result: RunResult;
  /**
   * The interpreter must be restarted before the next run (the code ignored its interrupt, or
   * left threads running). `result.error.message` then ends mid-sentence, for the session to
   * say what the restart did.
   */
  restart: boolean;
}

export interface RunSpec {
  container: Kernel;
  runId: string;
  session: string;
  config: SandboxConfig;
  options: RunOptions;
  /** This run started its container. */
  cold: boolean;
  /** performance.now() when the run was asked for. */
  started: number;
  code: string;
  /** Told when a `done` comes after the run ended: its end was forged (see watchBetweenRuns). */
  onForgedEnd?: (run: string) => void;
}
