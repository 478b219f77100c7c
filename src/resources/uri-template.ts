// RFC 6570 URI templates: expansion (levels 1–3, no prefix or explode modifiers) and matching a
// URI back to its variables, percent-decoded. Used for resource templates and, later, completion.

import { decodeUriComponent } from './uri.js';

type Operator = '' | '+' | '#' | '.' | '/' | ';' | '?' | '&';

interface Expression {
  readonly operator: Operator;
  readonly names: readonly string[];
}

type Part = string | Expression;

const OPERATORS: Record<
  Operator,
  { first: string; separator: string; named: boolean; reserved: boolean }
> = {
  '': { first: '', separator: ',', named: false, reserved: false },
  '+': { first: '', separator: ',', named: false, reserved: true },
  '#': { first: '#', separator: ',', named: false, reserved: true },
  '.': { first: '.', separator: '.', named: false, reserved: false },
  '/': { first: '/', separator: '/', named: false, reserved: false },
  ';': { first: ';', separator: ';', named: true, reserved: false },
  '?': { first: '?', separator: '&', named: true, reserved: false },
  '&': { first: '&', separator: '&', named: true, reserved: false },
};

const VARNAME =
  /^(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*$/;

/** A parsed RFC 6570 template. */
export interface UriTemplate {
  readonly template: string;
  /** Variable names in order of appearance. */
  readonly variables: readonly string[];
  expand(values: Readonly<Record<string, string | undefined>>): string;
  /** The variables (percent-decoded) if `uri` is an expansion of this template, else undefined. */
  match(uri: string): Record<string, string> | undefined;
}

/** Parse a template; throws on malformed expressions (unclosed brace, bad name, modifiers). */
export function parseUriTemplate(template: string): UriTemplate {
  const parts: Part[] = [];
  let index = 0;
  while (index < template.length) {
    const open = template.indexOf('{', index);
    if (open === -1) {
      parts.push(template.slice(index));
      break;
    }
    if (open > index) parts.push(template.slice(index, open));
    const close = template.indexOf('}', open);
    if (close === -1)
      throw new Error(`unclosed expression in URI template ${template}`);
    parts.push(parseExpression(template.slice(open + 1, close), template));
    index = close + 1;
  }
  const variables = parts.flatMap((part) =>
    typeof part === 'string' ? [] : part.names,
  );
  const matcher = buildMatcher(parts);

  return {
    template,
    variables,
    expand: (values) =>
      parts
        .map((part) =>
          typeof part === 'string' ? part : expandExpression(part, values),
        )
        .join(''),
    match(uri) {
      const found = matcher.regex.exec(uri);
      if (found === null) return undefined;
      const result: Record<string, string> = {};
      for (const [position, name] of matcher.names.entries()) {
        const raw = found[position + 1];
        if (raw === undefined) continue;
        const value = decodeUriComponent(raw);
        if (value === undefined) return undefined;
        result[name] = value;
      }
      return result;
    },
  };
}

function parseExpression(body: string, template: string): Expression {
  const first = body.charAt(0);
  const operator: Operator =
    first in OPERATORS && first !== '' ? (first as Operator) : '';
  const names = (operator === '' ? body : body.slice(1)).split(',');
  for (const name of names) {
    if (!VARNAME.test(name))
      throw new Error(
        `unsupported variable "${name}" in URI template ${template}`,
      );
  }
  return { operator, names };
}

function encode(value: string, reserved: boolean): string {
  // Reserved expansion keeps reserved characters and existing escapes; simple expansion escapes all
  // but unreserved characters (RFC 6570 §3.2.1).
  if (reserved) return encodeURI(value).replace(/%25([0-9A-Fa-f]{2})/g, '%$1');
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function expandExpression(
  expression: Expression,
  values: Readonly<Record<string, string | undefined>>,
): string {
  const spec = OPERATORS[expression.operator];
  const pieces: string[] = [];
  for (const name of expression.names) {
    const value = values[name];
    if (value === undefined) continue;
    const encoded = encode(value, spec.reserved);
    if (!spec.named) pieces.push(encoded);
    else if (value === '' && expression.operator === ';') pieces.push(name);
    else pieces.push(`${name}=${encoded}`);
  }
  return pieces.length === 0 ? '' : spec.first + pieces.join(spec.separator);
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function buildMatcher(parts: readonly Part[]): {
  regex: RegExp;
  names: string[];
} {
  const names: string[] = [];
  // Simple values hold unreserved characters, escapes and non-ASCII; reserved values anything but
  // what ends the component they sit in.
  const simple = '((?:[A-Za-z0-9\\-._~]|%[0-9A-Fa-f]{2}|[^\\u0000-\\u007f])+)';
  const reserved = '((?:[^%?#]|%[0-9A-Fa-f]{2})+)';
  const fragment = '((?:[^%]|%[0-9A-Fa-f]{2})+)';
  const pattern = parts
    .map((part) => {
      if (typeof part === 'string') return escapeRegex(part);
      const spec = OPERATORS[part.operator];
      const value =
        part.operator === '#' ? fragment : spec.reserved ? reserved : simple;
      const pieces = part.names.map((name) => {
        names.push(name);
        return spec.named ? `${escapeRegex(name)}=${value}` : value;
      });
      return escapeRegex(spec.first) + pieces.join(escapeRegex(spec.separator));
    })
    .join('');
  return { regex: new RegExp(`^${pattern}$`, 'u'), names };
}
