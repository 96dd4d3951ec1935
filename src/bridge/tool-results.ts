// Turning a proxied server's CallToolResult (untrusted) into what Python code gets back: the
// structured content when there is one, else the text (a list for several items). Images stay
// in the value: they reach the model only when the code returns or emits them (see format.ts).
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

export interface SandboxToolResult {
  isError: boolean;
  value: unknown;
  /** A short text for ToolError messages. */
  errorText?: string;
  /** The well-formed images among the content, so a returned one can be recognised and attached. */
  images: ResultImage[];
}

export interface ResultImage {
  mime: string;
  data: string;
}

const IMAGE_MIME = /^image\/(png|jpeg|gif|webp|svg\+xml)$/;

type ContentItem = CallToolResult['content'][number];

function itemValue(item: ContentItem): unknown {
  switch (item.type) {
    case 'text':
      return item.text;
    case 'image':
      return { type: 'image', mimeType: item.mimeType, data: item.data };
    case 'audio':
      return { type: 'audio', mimeType: item.mimeType, data: item.data };
    case 'resource_link':
      return { type: 'resource_link', uri: item.uri, name: item.name, ...(item.mimeType ? { mimeType: item.mimeType } : {}) };
    case 'resource':
      return { type: 'resource', ...item.resource };
    default:
      return item;
  }
}

export function toSandboxResult(result: CallToolResult): SandboxToolResult {
  const content = Array.isArray(result.content) ? result.content : [];
  const images = content.flatMap((item) =>
    item.type === 'image' && typeof item.data === 'string' && IMAGE_MIME.test(item.mimeType) && /^[A-Za-z0-9+/]*={0,2}$/.test(item.data)
      ? [{ mime: item.mimeType, data: item.data }]
      : [],
  );
  const texts = content.flatMap((item) => (item.type === 'text' ? [item.text] : []));
  if (result.isError) {
    return { isError: true, value: null, errorText: texts.join('\n').slice(0, 4000) || 'the tool reported an error', images: [] };
  }
  if (result.structuredContent !== undefined && result.structuredContent !== null) {
    return { isError: false, value: result.structuredContent, images };
  }
  const values = content.map(itemValue);
  return { isError: false, value: values.length === 1 ? values[0] : values, images };
}
