// Python-flavoured signatures for tools, from their JSON schemas, so that `help()` and search
// results read like the functions an agent will call, nested shapes included:
// `create_entities(*, entities: list[{name: str, entityType: str, observations: list[str]}]) -> {...}`.
// Types are cut to a few levels and a few hundred characters: the full schema is in the docs.
import { z } from 'zod';
import { clip } from '../../shared/clip.ts';

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Object levels shown inside one type; deeper objects show as `dict`. */
const MAX_DEPTH = 3;
/** A type longer than this is shown shallower, then cut. */
const MAX_TYPE_CHARS = 240;
const MAX_ENUM_VALUES = 12;
const MAX_DEFAULT_CHARS = 40;
const MAX_DESCRIPTION_CHARS = 500;
/** Schema nodes visited per rendering: a hostile schema (refs fanning out) costs no more. */
const MAX_VISITS = 2000;

const objectSchema = z
  .object({
    properties: z.record(z.string(), z.unknown()).optional(),
    required: z.array(z.string()).optional(),
  })
  .passthrough();

export interface ParamDoc {
  name: string;
  type: string;
  required: boolean;
  description?: string;
  /** The schema's default, as JSON; absent when it gives none. */
  default?: unknown;
  /** False for names Python cannot take as keywords (pass them via call_tool). */
  identifier: boolean;
}

const JSON_TO_PYTHON: Record<string, string> = {
  string: 'str',
  integer: 'int',
  number: 'float',
  boolean: 'bool',
  array: 'list',
  object: 'dict',
  null: 'None',
};

type Schema = Record<string, unknown>;

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A JSON value as a Python literal: `"a"`, `3`, `True`, `None`, `["x"]`. */
function pythonLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'None';
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(pythonLiteral).join(', ')}]`;
  if (isSchema(value))
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${pythonLiteral(v)}`)
      .join(', ')}}`;
  return 'None';
}

class TypeRenderer {
  private refs = 0;
  private visits = 0;
  private readonly root: unknown;

  constructor(root: unknown) {
    this.root = root;
  }

  /** `depth` counts the object levels still allowed. */
  render(raw: unknown, depth: number): string {
    if (!isSchema(raw) || ++this.visits > MAX_VISITS) return 'Any';
    if (typeof raw.$ref === 'string') return this.ref(raw.$ref, depth);
    if ('const' in raw) return `Literal[${pythonLiteral(raw.const)}]`;
    if (Array.isArray(raw.enum) && raw.enum.length > 0) {
      const shown = raw.enum.slice(0, MAX_ENUM_VALUES).map(pythonLiteral);
      return `Literal[${shown.join(', ')}${raw.enum.length > MAX_ENUM_VALUES ? ', ...' : ''}]`;
    }
    const union = Array.isArray(raw.anyOf) ? raw.anyOf : Array.isArray(raw.oneOf) ? raw.oneOf : undefined;
    if (union) return this.union(union.map((s) => this.render(s, depth)));
    if (Array.isArray(raw.allOf)) return this.allOf(raw.allOf, depth);
    const types = Array.isArray(raw.type) ? raw.type : typeof raw.type === 'string' ? [raw.type] : [];
    if (types.length === 0) {
      if (isSchema(raw.properties)) return this.object(raw, depth);
      if (raw.items !== undefined) return this.array(raw, depth);
      return 'Any';
    }
    return this.union(
      types.map((t) => {
        if (t === 'array') return this.array(raw, depth);
        if (t === 'object') return this.object(raw, depth);
        return typeof t === 'string' ? (JSON_TO_PYTHON[t] ?? 'Any') : 'Any';
      }),
    );
  }

  private union(parts: string[]): string {
    const unique = [...new Set(parts)];
    if (unique.includes('Any')) return 'Any';
    // None last, as Python writes Optional.
    return [...unique.filter((p) => p !== 'None'), ...unique.filter((p) => p === 'None')].join(' | ');
  }

  private array(raw: Schema, depth: number): string {
    return isSchema(raw.items) ? `list[${this.render(raw.items, depth)}]` : 'list';
  }

  private object(raw: Schema, depth: number): string {
    const properties = isSchema(raw.properties) ? raw.properties : undefined;
    if (!properties || Object.keys(properties).length === 0) {
      const extra = raw.additionalProperties;
      return isSchema(extra) && depth > 0 ? `dict[str, ${this.render(extra, depth - 1)}]` : 'dict';
    }
    if (depth <= 0) return 'dict';
    const required = new Set(Array.isArray(raw.required) ? raw.required.filter((r): r is string => typeof r === 'string') : []);
    const fields = Object.entries(properties).map(([name, schema]) => {
      const key = IDENTIFIER.test(name) ? name : JSON.stringify(name);
      return `${key}${required.has(name) ? '' : '?'}: ${this.render(schema, depth - 1)}`;
    });
    return `{${fields.join(', ')}}`;
  }

  private allOf(parts: unknown[], depth: number): string {
    const schemas = parts
      .filter(isSchema)
      .map((s) => (typeof s.$ref === 'string' ? this.resolve(s.$ref) : s))
      .filter(isSchema);
    if (schemas.length === 1) return this.render(schemas[0], depth);
    if (schemas.length > 1 && schemas.every((s) => isSchema(s.properties))) {
      const merged = {
        type: 'object',
        properties: Object.assign({}, ...schemas.map((s) => s.properties)) as Record<string, unknown>,
        required: schemas.flatMap((s): unknown[] => (Array.isArray(s.required) ? (s.required as unknown[]) : [])),
      };
      return this.object(merged, depth);
    }
    return 'Any';
  }

  private ref(ref: string, depth: number): string {
    const name = ref.split('/').pop() || 'Any';
    // Recursive schemas end at the depth limit or after a few hops, under their own name.
    if (depth <= 0 || this.refs >= 8) return IDENTIFIER.test(name) ? name : 'Any';
    const target = this.resolve(ref);
    if (!target) return 'Any';
    this.refs++;
    try {
      return this.render(target, depth);
    } finally {
      this.refs--;
    }
  }

  /** A local JSON pointer (`#/$defs/X`, `#/definitions/X`) into the root schema. */
  private resolve(ref: string): unknown {
    if (!ref.startsWith('#')) return undefined;
    let node: unknown = this.root;
    for (const raw of ref.slice(1).split('/').filter(Boolean)) {
      const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      if (!isSchema(node) || !Object.hasOwn(node, key)) return undefined;
      node = node[key];
    }
    return node;
  }
}

/** The Python type of a schema: as deep as fits in MAX_TYPE_CHARS, then cut. */
function pythonType(schema: unknown, root: unknown = schema): string {
  let text = 'Any';
  for (let depth = MAX_DEPTH; depth >= 0; depth--) {
    text = new TypeRenderer(root).render(schema, depth);
    if (text.length <= MAX_TYPE_CHARS) return text;
  }
  return clip(text, MAX_TYPE_CHARS);
}

export function paramsOf(inputSchema: unknown): ParamDoc[] {
  const parsed = objectSchema.safeParse(inputSchema);
  if (!parsed.success || !parsed.data.properties) return [];
  const required = new Set(parsed.data.required ?? []);
  return Object.entries(parsed.data.properties).map(([name, raw]) => {
    const schema = isSchema(raw) ? raw : {};
    const description = typeof schema.description === 'string' ? schema.description : undefined;
    return {
      name,
      type: pythonType(raw, inputSchema),
      required: required.has(name),
      ...(description ? { description: description.slice(0, MAX_DESCRIPTION_CHARS) } : {}),
      ...('default' in schema ? { default: schema.default } : {}),
      identifier: IDENTIFIER.test(name),
    };
  });
}

/**
 * What a call returns, from the tool's outputSchema: its structured content. Without one, a
 * call returns the tool's content (CONTENT_TYPE).
 */
export function returnsOf(outputSchema: unknown): string | undefined {
  return isSchema(outputSchema) ? pythonType(outputSchema) : undefined;
}

/**
 * What a call of a tool without an outputSchema returns in Python (results/tool-results.ts):
 * one content item as itself (text as str; an image, audio or resource as a dict), several as
 * a list of them.
 */
export const CONTENT_TYPE = 'str | dict | list[str | dict]';
/** The same in words, for docs and help(). */
export const CONTENT_RETURNS = `the tool's content: str for one text item; a dict for one image, audio or resource ({"type": "image", "mimeType", "data"}, {"type": "resource_link", "uri", ...}); a list of those when it sends several`;
/** What a tool without an outputSchema returns once every call seen returned one text item. */
export const TEXT_RETURNS = "str: the tool's text (every call so far returned one text item)";

/** How the calls of a tool so far returned: one text item each time, or other content. */
export type ResultsSeen = 'text' | 'content';

/** The Python type a call returns: the outputSchema's, else str when every call seen returned text, else CONTENT_TYPE. */
export function returnTypeOf(returns: string | undefined, seen: ResultsSeen | undefined): string {
  return returns ?? (seen === 'text' ? 'str' : CONTENT_TYPE);
}

/** The same in words, for docs and help(). */
export function returnsText(returns: string | undefined, seen: ResultsSeen | undefined): string {
  return returns ?? (seen === 'text' ? TEXT_RETURNS : CONTENT_RETURNS);
}

/** Whether a tool takes keys its schema does not list (only when the schema says so). */
export function takesOtherKeys(inputSchema: unknown): boolean {
  if (!isSchema(inputSchema) || !isSchema(inputSchema.properties)) return true;
  const extra = inputSchema.additionalProperties;
  return (
    extra === true ||
    isSchema(extra) ||
    isSchema(inputSchema.patternProperties) ||
    'anyOf' in inputSchema ||
    'oneOf' in inputSchema ||
    'allOf' in inputSchema
  );
}

function defaultText(param: ParamDoc): string {
  if (!('default' in param)) return 'None';
  const text = pythonLiteral(param.default);
  return text.length <= MAX_DEFAULT_CHARS ? text : '...';
}

/** `create_entities(*, entities: list[{name: str}], note: str = None) -> {ok: bool}` (`returns`: the Python return type). */
export function signatureOf(alias: string, params: readonly ParamDoc[], returns: string = CONTENT_TYPE): string {
  const ordered = [...params.filter((p) => p.required), ...params.filter((p) => !p.required)];
  const parts = ordered.map((p) => {
    const name = p.identifier ? p.name : JSON.stringify(p.name);
    return p.required ? `${name}: ${p.type}` : `${name}: ${p.type} = ${defaultText(p)}`;
  });
  return `${alias}(${parts.length > 0 ? `*, ${parts.join(', ')}` : ''}) -> ${returns}`;
}
