// The settings that mirror keys of the configuration, and the JSON Schema each has in
// package.json, generated from the configuration's zod schema so that the two never disagree
// (types, ranges, defaults, patterns), and the order the Settings editor lists them in (each
// one's `order`, from SETTING_ORDER). What a person wrote stays as package.json has it: each
// setting's description, scope and other words for the settings editor.
// scripts/settings-schema.ts writes package.json from this; a unit test fails when it differs.
// No 'vscode' here.
import { z } from 'zod';
import { proxyConfigSchema, runLogConfigSchema, sandboxConfigSchema, serversSchema, type SandboxConfig } from '../../config/schema.ts';
import { PROXY_SETTING_KEYS, RUN_LOG_SETTING_KEYS, SANDBOX_SETTING_KEYS, SECTION } from './trusted-settings.ts';

/** A setting and the configuration key it gives its value to (settings.ts reads it so). */
export interface MirroredSetting {
  /** The dotted configuration path. */
  config: string;
  /** What a value of the setting must be. */
  schema: z.ZodType;
}

type JsonSchema = Record<string, unknown>;

/** Keys of a setting's entry in package.json that a person writes; every other key is generated. */
const HAND_WRITTEN = new Set([
  'description',
  'markdownDescription',
  'enumDescriptions',
  'markdownEnumDescriptions',
  'enumItemLabels',
  'scope',
  'tags',
  'editPresentation',
  'deprecationMessage',
  'markdownDeprecationMessage',
  'ignoreSync',
]);

/**
 * The settings the Settings editor lists first, in this order (by their name after
 * `codeExecutionMode.`), as a person sets the sandbox up: where code runs, its image, the
 * servers and what sandboxed code may read, the limits of a run, then the advanced ones. The
 * settings not named here (the proxy's and the run log's bounds) follow, in the order
 * mirroredSettings gives them.
 */
export const SETTING_ORDER: readonly string[] = [
  'sandbox.backend',
  'sandbox.runtime',
  'sandbox.image',
  'sandbox.packages',
  'servers',
  'sandbox.workspaceAccess',
  'sandbox.network.allow',
  'sandbox.network.ask',
  'sandbox.network.maxRequestsPerRun',
  'sandbox.network.maxBytesPerRun',
  'sandbox.network.maxConnections',
  'sandbox.timeoutSeconds',
  'sandbox.maxTimeoutSeconds',
  'sandbox.memory',
  'sandbox.cpus',
  'sandbox.pids',
  'sandbox.tmpSize',
  'sandbox.maxSessions',
  'sandbox.idleSeconds',
  'sandbox.resultChars',
  'sandbox.maxOutputChars',
  'sandbox.prewarm',
  'sandbox.runtimeOrder',
  'sandbox.podmanPath',
  'sandbox.dockerPath',
  'sandbox.podmanConnection',
  'sandbox.dockerContext',
  'sandbox.ociRuntime',
  'sandbox.extraRunArgs',
  'sandbox.pipIndexUrl',
  'sandbox.interruptGraceSeconds',
];

/** Each setting's `order` (1, 2, ...): SETTING_ORDER first, then the rest; throws on a name there that is no setting. */
export function settingOrders(): Record<string, number> {
  const names = Object.keys(mirroredSettings());
  const first = SETTING_ORDER.map((name) => `${SECTION}.${name}`);
  const unknown = first.filter((name) => !names.includes(name));
  if (unknown.length > 0) throw new Error(`SETTING_ORDER names settings that do not exist: ${unknown.join(', ')}`);
  const ordered = [...first, ...names.filter((name) => !first.includes(name))];
  return Object.fromEntries(ordered.map((name, i) => [name, i + 1]));
}

/** Every setting of the extension, by its full name, with the configuration key it mirrors. */
export function mirroredSettings(): Record<string, MirroredSetting> {
  const settings: Record<string, MirroredSetting> = { [`${SECTION}.servers`]: { config: 'servers', schema: serversSchema } };
  for (const key of SANDBOX_SETTING_KEYS) {
    // workspaceAccess sets `workspace`: its access, the path being the window's folders.
    settings[`${SECTION}.sandbox.${key}`] =
      key === 'workspaceAccess'
        ? { config: 'sandbox.workspace', schema: sandboxConfigSchema.shape.workspace.unwrap().shape.access }
        : isNetworkKey(key)
          ? { config: `sandbox.${key}`, schema: sandboxConfigSchema.shape.network.unwrap().shape[networkKeyOf(key)] }
          : { config: `sandbox.${key}`, schema: sandboxConfigSchema.shape[key] };
  }
  for (const key of PROXY_SETTING_KEYS)
    settings[`${SECTION}.proxy.${key}`] = { config: `proxy.${key}`, schema: proxyConfigSchema.shape[key] };
  for (const key of RUN_LOG_SETTING_KEYS)
    settings[`${SECTION}.runLog.${key}`] = { config: `runLog.${key}`, schema: runLogConfigSchema.shape[key] };
  return settings;
}

type SandboxSettingKey = (typeof SANDBOX_SETTING_KEYS)[number];
type NetworkSettingKey = Extract<SandboxSettingKey, `network.${string}`>;
type NetworkKey = keyof SandboxConfig['network'];

function isNetworkKey(key: SandboxSettingKey): key is NetworkSettingKey {
  return key.startsWith('network.');
}

/** `network.allow` → `allow`. */
function networkKeyOf(key: NetworkSettingKey): NetworkKey {
  return key.slice('network.'.length) as NetworkKey;
}

/**
 * The sandbox's settings by key as the configuration nests them: each `network.<key>` setting
 * becomes a key of `network`, the others stay as they are.
 */
export function nestedSandboxSettings(raw: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const nested: Record<string, unknown> = {};
  const network: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (key.startsWith('network.')) network[key.slice('network.'.length)] = value;
    else nested[key] = value;
  }
  if (Object.keys(network).length > 0) nested.network = network;
  return nested;
}

/**
 * The JSON Schema of one setting. A key without a default in the configuration has one in the
 * settings all the same: `""` for a string (settings.ts reads it as absent), `{}` for an object.
 */
export function settingJsonSchema(schema: z.ZodType): JsonSchema {
  const { $schema: _ignored, ...json } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-7' }) as JsonSchema;
  if ('default' in json) return json;
  if (json.type === 'object') return { ...json, default: {} };
  if (json.type !== 'string') throw new Error(`a setting needs a default: ${JSON.stringify(json)}`);
  const { minLength, pattern, ...rest } = json;
  return {
    ...rest,
    default: '',
    ...(typeof minLength === 'number' && minLength > 1 ? { minLength } : {}),
    ...(typeof pattern === 'string' ? { pattern: `^$|${pattern}` } : {}),
  };
}

/** One setting's entry: `type` first, the generated rest and its order, then what a person wrote. */
function entryOf(setting: MirroredSetting, order: number, written: JsonSchema): JsonSchema {
  const { type, description, ...generated } = settingJsonSchema(setting.schema);
  const human = Object.fromEntries(Object.entries(written).filter(([key]) => HAND_WRITTEN.has(key)));
  if (!human.description && !human.markdownDescription && !description) throw new Error('has no description: write one in package.json');
  return {
    ...(type === undefined ? {} : { type }),
    ...generated,
    order,
    ...(description === undefined ? {} : { description }),
    ...human,
  };
}

/** package.json as the generation writes it, from its current text; throws on a setting that mirrors nothing, or one missing. */
export function renderManifest(text: string): string {
  const manifest = JSON.parse(text) as { contributes: { configuration: { properties: Record<string, JsonSchema> } } };
  const written = manifest.contributes.configuration.properties;
  const mirrored = mirroredSettings();
  const unknown = Object.keys(written).filter((name) => !Object.hasOwn(mirrored, name));
  if (unknown.length > 0)
    throw new Error(`package.json: these settings mirror no configuration key (see manifest-settings.ts): ${unknown.join(', ')}`);
  const missing = Object.keys(mirrored).filter((name) => !Object.hasOwn(written, name));
  if (missing.length > 0)
    throw new Error(`package.json: add these settings, each with its description, where they belong: ${missing.join(', ')}`);
  const orders = settingOrders();
  const properties: Record<string, JsonSchema> = {};
  for (const [name, entry] of Object.entries(written)) {
    try {
      properties[name] = entryOf(mirrored[name]!, orders[name]!, entry);
    } catch (error) {
      throw new Error(`package.json: ${name} ${(error as Error).message}`, { cause: error });
    }
  }
  manifest.contributes.configuration.properties = properties;
  return `${JSON.stringify(manifest, null, 2)}\n`;
}
