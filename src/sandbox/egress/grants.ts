// The answers "this session" and "always" a container's proxy remembers, so that it does not put
// each request to the bridge again. "always" stands for the user's setting (VS Code adds the host
// to sandbox.network.allow; Undo, or the user, takes it out): it holds only while the
// sandbox.network it was given under is the one in force. A new one (a configuration reload)
// drops it, and the next request to that host goes back to the bridge, which answers from its own
// grants (NetworkGrants) or asks the user again. "this session" holds for the proxy's life.
import type { NetworkConfig } from './policy.ts';
import type { EgressAnswer } from './types.ts';

export class ProxyGrants {
  private readonly session = new Set<string>();
  private readonly always = new Set<string>();
  /** The sandbox.network the "always" grants were given under. */
  private givenUnder: NetworkConfig | undefined;

  /** The grants in force under `network` (the setting as read for this request). */
  under(network: NetworkConfig): Pick<ReadonlySet<string>, 'has'> {
    this.settle(network);
    return { has: (key) => this.session.has(key) || this.always.has(key) };
  }

  /** Remembers an answer for `key` given while `network` was in force ("once" and "deny" leave nothing). */
  add(key: string, answer: EgressAnswer, network: NetworkConfig): void {
    this.settle(network);
    if (answer === 'session') this.session.add(key);
    else if (answer === 'always') this.always.add(key);
  }

  private settle(network: NetworkConfig): void {
    if (network === this.givenUnder) return;
    this.always.clear();
    this.givenUnder = network;
  }
}
