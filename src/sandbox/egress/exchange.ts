// One request through the proxy from arrival to its record: what it asked for, how it was
// decided, the address it reached and the bytes each way. It is recorded once, when it ends,
// whatever the decision; the record carries no header or body of the request or the response.
import type { Refusal } from './refusals.ts';
import type { EgressRun } from './run-budget.ts';
import type { EgressDecision, EgressRecord, EgressTarget } from './types.ts';

export class Exchange {
  private readonly started = performance.now();
  private finished = false;
  /** Counted against the run's connections (released when it ends). */
  admitted = false;
  decision: EgressDecision = 'failed';
  reason: string | undefined;
  address: string | undefined;
  bytesOut = 0;
  bytesIn = 0;

  readonly run: EgressRun | undefined;
  readonly target: EgressTarget;
  readonly method: string;

  constructor(run: EgressRun | undefined, target: EgressTarget, method: string) {
    this.run = run;
    this.target = target;
    this.method = method;
  }

  refuse(refusal: Refusal): void {
    this.decision = refusal.decision;
    this.reason = refusal.reason;
  }

  /** Ends the request: its connection stops counting and the run's handler gets its record (once). */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    if (this.admitted) this.run?.release();
    if (this.run?.ended && this.reason === undefined && (this.decision === 'allowed' || this.decision === 'asked')) {
      this.reason = 'closed when the run ended';
    }
    const record: EgressRecord = {
      runId: this.run?.runId ?? '',
      host: this.target.host,
      port: this.target.port,
      method: this.method,
      ...(this.address === undefined ? {} : { address: this.address }),
      decision: this.decision,
      bytesOut: this.bytesOut,
      bytesIn: this.bytesIn,
      durationMs: Math.round(performance.now() - this.started),
      ...(this.reason === undefined ? {} : { reason: this.reason }),
    };
    try {
      this.run?.handler?.record(record);
    } catch {
      // A failing audit sink must not take the proxy down with it; the bridge logs its own errors.
    }
  }
}
