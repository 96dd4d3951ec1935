// How sandboxes are kept apart from each other on the host. Every sandbox runs as uid 65534
// inside; without a user namespace of its own, that is the same host uid for all of them, so a
// sandbox that reaches another's processes (a /proc mount, say) could read their environment or
// signal them. Podman's --userns=auto gives each container its own range of host ids (rootful:
// from the user `containers` in /etc/subuid and /etc/subgid; rootless: from the user's own
// range). Docker's userns-remap maps every container to the same range: that keeps sandboxes
// apart from the host's users, not from each other.
import { SANDBOX_UID, USERNS_IDS } from './commands.ts';

/** What doctor and Diagnose say about it, and what a person can do. */
export interface Isolation {
  /** Podman: each sandbox in its own user namespace (`--userns=auto`). */
  ownUserNamespace: boolean;
  detail: string;
  problem?: string;
  fix?: { label: string; command?: string; url?: string; setting?: string };
}

/** Host ids one sandbox's namespace takes. */
const IDS_PER_SANDBOX = USERNS_IDS;

/** The range podman's documentation gives the user `containers` for --userns=auto. */
const CONTAINERS_RANGE = 'containers:2147483647:2147483648';
const USERNS_DOCS = 'https://docs.podman.io/en/latest/markdown/podman-run.1.html#userns-mode';

export const ISOLATED: Isolation = {
  ownUserNamespace: true,
  detail: 'each sandbox in its own user namespace (--userns=auto): no two share a host uid',
};

const RISK = "so one that reaches another's processes (through a /proc mount, say) could read their environment or signal them";

/** One entry of `podman info`'s host.idMappings. */
export interface IdMapping {
  container_id: number;
  host_id: number;
  size: number;
}

/** Subordinate ids a rootless user has: everything in its mapping but its own uid (container 0). */
export function subordinateIds(map: readonly IdMapping[]): number {
  return map.filter((m) => m.container_id !== 0).reduce((sum, m) => sum + m.size, 0);
}

/** The host uid a container uid has in a (rootless) mapping, if mapped. */
export function hostIdOf(id: number, map: readonly IdMapping[]): number | undefined {
  const entry = map.find((m) => id >= m.container_id && id < m.container_id + m.size);
  return entry ? entry.host_id + (id - entry.container_id) : undefined;
}

/**
 * Rootless podman: whether the user's subordinate ids hold `sandboxes` namespaces of their own
 * (each takes IDS_PER_SANDBOX ids). Most users get 65536: room for one, so a second session would
 * not start; then sandboxes share one host uid, and this says so with the fix.
 */
export function rootlessIsolation(uidmap: readonly IdMapping[], gidmap: readonly IdMapping[], sandboxes: number): Isolation | undefined {
  const ids = Math.min(subordinateIds(uidmap), subordinateIds(gidmap));
  const room = Math.floor(ids / IDS_PER_SANDBOX);
  if (room >= sandboxes) return undefined;
  const hostUid = hostIdOf(SANDBOX_UID, uidmap);
  const needed = sandboxes * IDS_PER_SANDBOX;
  return {
    ownUserNamespace: false,
    detail:
      `sandboxes share one host uid (${hostUid ?? 'a subordinate id'}): your ${ids} subordinate ids hold ${room} sandbox namespace(s) ` +
      `of ${IDS_PER_SANDBOX} ids, fewer than the ${sandboxes} a bridge may run at once (sandbox.maxSessions, a spare and a check)`,
    problem:
      `Sandboxes share one host uid, ${RISK}. Podman runs each in its own user namespace (--userns=auto) when your user has ` +
      `at least ${needed} subordinate ids: add a range no other user has in /etc/subuid and /etc/subgid ` +
      `(\`sudo usermod --add-subuids FROM-TO --add-subgids FROM-TO $USER\`), then run \`podman system migrate\`.`,
    fix: {
      label: `Give your user at least ${needed} subordinate ids (usermod --add-subuids/--add-subgids, then podman system migrate)`,
      url: USERNS_DOCS,
    },
  };
}

/** A runtime error that means "no user namespace of its own here", not "no sandbox at all". */
export const USERNS_FAILURE = /available IDs|subuid|subgid|mappings for user|newuidmap|newgidmap|uid_map|gid_map|user namespace/i;

/** Podman could not start a sandbox with --userns=auto (`error`: its words); it runs without. */
export function podmanUsernsUnavailable(rootless: boolean, error: string): Isolation {
  const why = errorWords(error);
  if (rootless) {
    return {
      ownUserNamespace: false,
      detail: `sandboxes share one host uid: podman cannot give each its own user namespace (${why})`,
      problem:
        `Sandboxes share one host uid, ${RISK}. Podman could not run a sandbox with --userns=auto: give your user ` +
        `subordinate ids in /etc/subuid and /etc/subgid (\`sudo usermod --add-subuids FROM-TO --add-subgids FROM-TO $USER\`), ` +
        `then run \`podman system migrate\`.`,
      fix: { label: 'Give your user subordinate ids (usermod --add-subuids/--add-subgids, then podman system migrate)', url: USERNS_DOCS },
    };
  }
  return {
    ownUserNamespace: false,
    detail: `sandboxes share uid ${SANDBOX_UID} on the host: podman cannot give each its own user namespace (${why})`,
    problem:
      `Sandboxes share uid ${SANDBOX_UID} on the host, ${RISK}. Rootful Podman runs each in its own user namespace ` +
      `(--userns=auto) once the user \`containers\` has subordinate ids: add \`${CONTAINERS_RANGE}\` to /etc/subuid and /etc/subgid.`,
    fix: {
      label: 'Give Podman a range of ids for sandboxes (as root)',
      command: `echo ${CONTAINERS_RANGE} | sudo tee -a /etc/subuid /etc/subgid`,
      url: USERNS_DOCS,
    },
  };
}

/** The runtime's last two error lines, without log prefixes: `time=… level=error msg="…"`, `Error: `. */
function errorWords(stderr: string): string {
  const lines = stderr.trim().split('\n').filter(Boolean).slice(-2);
  const words = lines.map((line) => {
    const msg = /\bmsg="((?:[^"\\]|\\.)*)"/.exec(line);
    return (msg ? msg[1]!.replace(/\\(.)/g, '$1') : line).replace(/^Error: /, '');
  });
  return words.join('; ').slice(0, 300);
}

/** Docker: never a namespace per container; remapped or rootless, one shared range for all of them. */
export function dockerIsolation(securityOptions: readonly string[]): Isolation {
  const option = (name: string) => securityOptions.some((o) => new RegExp(`(^|,)name=${name}(,|$)`).test(o));
  const fix = { label: 'Use Podman, which runs each sandbox in its own user namespace', setting: 'sandbox.runtime' };
  const mapper = option('userns') ? "Docker's userns-remap" : option('rootless') ? 'rootless Docker' : undefined;
  if (mapper) {
    return {
      ownUserNamespace: false,
      detail: `sandboxes share one host uid: ${mapper} maps every container to the same ids (apart from the host's users, not from each other)`,
      problem: `Sandboxes share one host uid, ${RISK}: ${mapper} gives every container the same mapping. Podman gives each sandbox its own (--userns=auto).`,
      fix,
    };
  }
  return {
    ownUserNamespace: false,
    detail: `sandboxes share uid ${SANDBOX_UID} on the host: Docker runs containers in the host's user namespace (no userns-remap)`,
    problem:
      `Sandboxes share uid ${SANDBOX_UID} on the host, ${RISK}. Docker has no user namespace per container (its userns-remap, ` +
      'a daemon setting, maps all containers alike): use Podman, which runs each sandbox in its own (--userns=auto).',
    fix,
  };
}

/** Added to a start that failed because the ranges of ids for sandboxes are used up. */
export function usernsStartHint(stderr: string): string | undefined {
  if (!/could not find enough available IDs/i.test(stderr)) return undefined;
  return (
    'Each sandbox runs in its own user namespace (podman --userns=auto) and the ids for them are used up ' +
    '(other sandboxes are running): close some sessions, or give podman a larger range (rootful: the user `containers` ' +
    'in /etc/subuid and /etc/subgid; rootless: your own, then `podman system migrate`).'
  );
}
