// Turning a proxied server's CallToolResult (untrusted) into what Python code gets back: the
// structured content when there is one, else the text (a list for several items). Images stay
// in the value: they reach the model only when the code returns or emits them (see format.ts);
// audio the same way.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

export interface SandboxToolResult {
  isError: boolean;
  value: unknown;
  /** A short text for ToolError messages. */
  errorText?: string;
  /** An error result's structuredContent and content items (ToolError.structured / .content). */
  errorStructured?: unknown;
  errorContent?: unknown[];
  /** The well-formed images and audio among the content, so a returned one can be recognised and attached. */
  images: ResultImage[];
}

export interface ResultImage {
  mime: string;
  data: string;
}

const IMAGE_MIME = /^image\/(png|jpeg|gif|webp|svg\+xml)$/;
const AUDIO_MIME = /^audio\/(wav|x-wav|wave|mpeg|mp3|mp4|aac|ogg|opus|webm|flac|x-flac)$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

type ContentItem = CallToolResult['content'][number];

/** An item's annotations and _meta, when the server gave them. */
function extras(item: ContentItem): Record<string, unknown> {
  const { annotations, _meta } = item as { annotations?: unknown; _meta?: unknown };
  return { ...(annotations !== undefined ? { annotations } : {}), ...(_meta !== undefined ? { _meta } : {}) };
}

/** Plain values: text as str; other items as dicts, with annotations and _meta when given. */
function itemValue(item: ContentItem): unknown {
  switch (item.type) {
    case 'text':
      return item.text;
    case 'image':
      return { type: 'image', mimeType: item.mimeType, data: item.data, ...extras(item) };
    case 'audio':
      return { type: 'audio', mimeType: item.mimeType, data: item.data, ...extras(item) };
    case 'resource_link': {
      const { type: _t, uri, name, title, description, mimeType, size } = item;
      return {
        type: 'resource_link',
        uri,
        name,
        ...(title !== undefined ? { title } : {}),
        ...(description !== undefined ? { description } : {}),
        ...(mimeType ? { mimeType } : {}),
        ...(size !== undefined ? { size } : {}),
        ...extras(item),
      };
    }
    case 'resource':
      return { type: 'resource', ...item.resource, ...extras(item) };
    default:
      return item;
  }
}

/**
 * Every item as a dict, for `call_tool(..., raw=True)` and ToolError.content: `{type: "text",
 * text}`, `{type: "image" | "audio", mimeType, data}`, `{type: "resource_link", uri, name, ...}`,
 * `{type: "resource", resource: {uri, mimeType?, text | blob}}`, each with annotations and _meta
 * when the server gave them.
 */
function rawItem(item: ContentItem): unknown {
  return item.type === 'text' ? { type: 'text', text: item.text, ...extras(item) } : item;
}

/** The images and audio of a result that can be attached when the code returns them. */
function mediaOf(content: ContentItem[]): ResultImage[] {
  return content.flatMap((item) =>
    (item.type === 'image' || item.type === 'audio') &&
    typeof item.data === 'string' &&
    (item.type === 'image' ? IMAGE_MIME : AUDIO_MIME).test(item.mimeType) &&
    BASE64.test(item.data)
      ? [{ mime: item.mimeType, data: item.data }]
      : [],
  );
}

export function toSandboxResult(result: CallToolResult, raw = false): SandboxToolResult {
  const content = Array.isArray(result.content) ? result.content : [];
  const images = mediaOf(content);
  const texts = content.flatMap((item) => (item.type === 'text' ? [item.text] : []));
  if (raw) {
    const value = {
      content: content.map(rawItem),
      ...(result.structuredContent !== undefined ? { structuredContent: result.structuredContent } : {}),
      isError: result.isError === true,
      ...(result._meta !== undefined ? { _meta: result._meta } : {}),
    };
    return {
      isError: false,
      value,
      images,
      ...(result.isError ? { errorText: texts.join('\n').slice(0, 4000) || 'the tool reported an error' } : {}),
    };
  }
  if (result.isError) {
    return {
      isError: true,
      value: null,
      errorText: texts.join('\n').slice(0, 4000) || 'the tool reported an error',
      ...(result.structuredContent !== undefined && result.structuredContent !== null ? { errorStructured: result.structuredContent } : {}),
      errorContent: content.map(rawItem),
      images: [],
    };
  }
  if (result.structuredContent !== undefined && result.structuredContent !== null) {
    return { isError: false, value: result.structuredContent, images };
  }
  const values = content.map(itemValue);
  return { isError: false, value: values.length === 1 ? values[0] : values, images };
}
