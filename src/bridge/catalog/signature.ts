// Python-flavoured signatures for tools, from their JSON input schemas, so that `help()` and
// search results read like the functions an agent will call.
import { z } from 'zod';

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

const propertySchema = z
  .object({
    type: z.union([z.string(), z.array(z.string())]).optional(),
    description: z.string().optional(),
    default: z.unknown().optional(),
    enum: z.array(z.unknown()).optional(),
    items: z.unknown().optional(),
  })
  .passthrough();

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

function pythonType(raw: unknown): string {
  const property = propertySchema.safeParse(raw);
  if (!property.success) return 'Any';
  const { type, enum: choices, items } = property.data;
  if (choices && choices.length > 0 && choices.length <= 8) {
    return `Literal[${choices.map((c) => JSON.stringify(c)).join(', ')}]`;
  }
  const types = (Array.isArray(type) ? type : type ? [type] : []).map((t) => JSON_TO_PYTHON[t] ?? 'Any');
  if (types.length === 0) return 'Any';
  if (types.length === 1 && types[0] === 'list' && items) return `list[${pythonType(items)}]`;
  return types.join(' | ');
}

export function paramsOf(inputSchema: unknown): ParamDoc[] {
  const parsed = objectSchema.safeParse(inputSchema);
  if (!parsed.success || !parsed.data.properties) return [];
  const required = new Set(parsed.data.required ?? []);
  return Object.entries(parsed.data.properties).map(([name, raw]) => {
    const description = propertySchema.safeParse(raw).data?.description;
    return {
      name,
      type: pythonType(raw),
      required: required.has(name),
      ...(description ? { description: description.slice(0, 500) } : {}),
      identifier: IDENTIFIER.test(name),
    };
  });
}

/** `create_entities(*, entities: list[dict], note: str | None = None)` */
export function signatureOf(alias: string, params: readonly ParamDoc[]): string {
  const ordered = [...params.filter((p) => p.required), ...params.filter((p) => !p.required)];
  const parts = ordered.map((p) => {
    const name = p.identifier ? p.name : JSON.stringify(p.name);
    return p.required ? `${name}: ${p.type}` : `${name}: ${p.type} | None = None`;
  });
  return `${alias}(${parts.length > 0 ? `*, ${parts.join(', ')}` : ''})`;
}
