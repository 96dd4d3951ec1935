// Which settings a workspace may not set unless it is trusted, and the value a setting has
// then. Every setting of this extension can weaken the sandbox or start a program (servers,
// image, runtime paths, extra run arguments, limits, timeouts, sessions), so all of them are
// restricted. VS Code drops restricted workspace values from `get()` only in some versions;
// `inspect()` gives every scope, so the rule is applied here, explicitly. No 'vscode' here:
// the rule is unit-tested.
import { proxyConfigSchema, runLogConfigSchema, type ProxyConfig, type RunLogConfig } from '../../config/schema.ts';

export const SECTION = 'codeExecutionMode';

// `pull` is not a setting: in VS Code the image is pulled when the person clicks "Pull".
export const SANDBOX_SETTING_KEYS = [
  'backend',
  'runtime',
  'runtimeOrder',
  'image',
  'ociRuntime',
  'memory',
  'cpus',
  'pids',
  'tmpSize',
  'timeoutSeconds',
  'maxTimeoutSeconds',
  'interruptGraceSeconds',
  'idleSeconds',
  'maxSessions',
  'prewarm',
  'maxOutputChars',
  'resultChars',
  'extraRunArgs',
  'podmanPath',
  'dockerPath',
  'podmanConnection',
  'dockerContext',
  // Not a key of the bridge's sandbox config: settings.ts turns it into `workspace`.
  'workspaceAccess',
  'packages',
  'pipIndexUrl',
  // sandbox.network, one setting per key (`sandbox.network.allow`...): settings.ts nests them again.
  'network.allow',
  'network.ask',
  'network.maxRequestsPerRun',
  'network.maxBytesPerRun',
  'network.maxConnections',
] as const;

/**
 * The proxy's limits and the run log's, one setting each (`proxy.<key>`, `runLog.<key>`). They
 * are machine settings: the run log is shared by every window, and a workspace has no say in how
 * much of this machine a proxied server may take or how much of the audit record is kept.
 */
export const PROXY_SETTING_KEYS = Object.keys(proxyConfigSchema.shape) as Array<keyof ProxyConfig>;
export const RUN_LOG_SETTING_KEYS = Object.keys(runLogConfigSchema.shape) as Array<keyof RunLogConfig>;

/** Every setting a workspace's own settings cannot change while it is not trusted. */
export const RESTRICTED_SETTINGS = [
  `${SECTION}.servers`,
  ...SANDBOX_SETTING_KEYS.map((k) => `${SECTION}.sandbox.${k}`),
  ...PROXY_SETTING_KEYS.map((k) => `${SECTION}.proxy.${k}`),
  ...RUN_LOG_SETTING_KEYS.map((k) => `${SECTION}.runLog.${k}`),
];

/** The scopes of a setting as `WorkspaceConfiguration.inspect()` gives them. */
export interface InspectedSetting<T> {
  defaultValue?: T;
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}

/**
 * A setting's value: what VS Code resolved when the workspace is trusted; otherwise the user's
 * value, else the default, and whether a workspace value was set aside.
 */
export function settingValue<T>(
  inspected: InspectedSetting<T> | undefined,
  trusted: boolean,
  resolved: T | undefined,
): { value: T | undefined; ignored: boolean } {
  if (trusted) return { value: resolved, ignored: false };
  const ignored = inspected?.workspaceValue !== undefined || inspected?.workspaceFolderValue !== undefined;
  return { value: inspected?.globalValue ?? inspected?.defaultValue, ignored };
}

/**
 * Every sandbox setting changes what runs, what the sandbox may do, or how much of this machine
 * it may take (limits, timeouts, sessions): in a trusted workspace, a workspace value of one of
 * these is used only once the user allows it (consent-items.ts); until then the user's value (or
 * the default) applies. (VS Code never takes the runtime paths, machine settings, from a
 * workspace; they are listed all the same.)
 */
export const CONSENT_SANDBOX_KEYS: ReadonlyArray<(typeof SANDBOX_SETTING_KEYS)[number]> = SANDBOX_SETTING_KEYS;

/** The workspace scope a setting's effective value comes from, if any (a folder's wins). */
export function workspaceScope(inspected: InspectedSetting<unknown> | undefined): 'workspace' | 'workspaceFolder' | undefined {
  if (inspected?.workspaceFolderValue !== undefined) return 'workspaceFolder';
  if (inspected?.workspaceValue !== undefined) return 'workspace';
  return undefined;
}

/**
 * The workspace scope that defines (or changes) one entry of an object setting, if any. A
 * workspace entry that sets only `inert` keys (enabling or describing a user's server) does not count.
 */
export function entryScope(
  inspected: InspectedSetting<Record<string, unknown>> | undefined,
  name: string,
  inert: ReadonlySet<string> = new Set(),
): 'workspace' | 'workspaceFolder' | undefined {
  const has = (value: Record<string, unknown> | undefined) => {
    if (value === undefined || value === null || typeof value !== 'object' || !Object.hasOwn(value, name)) return false;
    const entry = value[name];
    return !(entry && typeof entry === 'object' && Object.keys(entry).every((key) => inert.has(key)) && Object.keys(entry).length > 0);
  };
  if (has(inspected?.workspaceFolderValue)) return 'workspaceFolder';
  if (has(inspected?.workspaceValue)) return 'workspace';
  return undefined;
}
