// A form elicitation's answer as the proxied server gets it: a field the client left out that has
// a `default` in the server's form is filled in with it (a field the client gave is kept as
// given), and the answer is then checked against the form, as the SDK checks an answer. The
// defaults go in before the check, so that a required field with a default may be left out.
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { ErrorCode, McpError, type ElicitRequestFormParams, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';

type Form = ElicitRequestFormParams['requestedSchema'];
type Content = NonNullable<ElicitResult['content']>;

const validator = new AjvJsonSchemaValidator();

/** The content with every field it lacks and the form gives a default for filled in; nothing it has is changed. */
export function withDefaults(form: Form, content: Content): Content {
  const filled: Content = { ...content };
  for (const [key, field] of Object.entries(form.properties)) {
    if (filled[key] !== undefined || field.default === undefined) continue;
    filled[key] = Array.isArray(field.default) ? [...field.default] : field.default;
  }
  return filled;
}

/** An accepted answer with the form's defaults, checked against the form; other answers as they are. */
export function answerWithDefaults(form: Form, result: ElicitResult): ElicitResult {
  if (result.action !== 'accept') return result;
  const content = withDefaults(form, result.content ?? {});
  // An accept without content and nothing to fill in stays as the client sent it (the SDK checks only content).
  if (result.content === undefined && Object.keys(content).length === 0) return result;
  const check = validator.getValidator<Content>(form)(content);
  if (!check.valid) {
    throw new McpError(ErrorCode.InvalidParams, `Elicitation response content does not match requested schema: ${check.errorMessage}`);
  }
  return { ...result, content };
}
