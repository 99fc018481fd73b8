/**
 * Reading back a JSON document this product wrote (a manifest, a journal line, a resume file): parsed, checked
 * against the document's zod schema, and refused with a message that names the file and the field. The value
 * returned is the one parsed, untouched (fields this version does not know are kept, nothing is defaulted).
 */
import type { z } from 'zod';
import { GpuSessionsError } from './errors';

type Issue = z.core.$ZodIssue;

const label = (k: PropertyKey): string =>
  typeof k === 'number' ? `[${k}]` : typeof k === 'string' && /^[A-Za-z_$][\w$]*$/.test(k) ? `.${k}` : `[${JSON.stringify(String(k))}]`;

/** `items[3].sha256` (the document itself: `(the document)`). */
export function fieldPath(p: readonly PropertyKey[]): string {
  return p.length ? p.map(label).join('').replace(/^\./, '') : '(the document)';
}

function valueAt(doc: unknown, p: readonly PropertyKey[]): unknown {
  let v = doc;
  for (const k of p) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v)}`;
  return `${typeof v === 'number' ? 'the number' : typeof v === 'boolean' ? 'the boolean' : typeof v} ${String(v)}`;
}

const EXPECTED: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  object: 'an object',
  array: 'a list',
  record: 'an object',
  null: 'null',
};

function issueText(i: Issue, doc: unknown): string {
  const got = valueAt(doc, i.path);
  if (i.code === 'invalid_type') {
    const want = EXPECTED[i.expected] ?? i.expected;
    return got === undefined ? `missing (expected ${want})` : `expected ${want}, got ${kindOf(got)}`;
  }
  if (i.code === 'invalid_value') return `expected one of ${i.values.map((v) => JSON.stringify(v)).join(', ')}, got ${kindOf(got)}`;
  if (i.code === 'invalid_union') return `not one of the shapes this field takes (got ${kindOf(got)})`;
  return i.message;
}

/** The first problem of `doc` against `schema` as `field: what is wrong`, or null when it fits. */
export function documentProblem(schema: z.ZodType, doc: unknown): string | null {
  const r = schema.safeParse(doc);
  if (r.success) return null;
  const i = r.error.issues[0];
  return `${fieldPath(i.path)}: ${issueText(i, doc)}`;
}

/**
 * The type a module writes, checked at compile time to be one its reading schema accepts (`Written` must be
 * assignable to the schema's input): `type Doc = Reads<typeof schema, WrittenInterface>`.
 */
export type Reads<Schema extends z.ZodType, Written extends z.input<Schema>> = Written;

interface ReadDocumentOptions {
  /** What to do about it, appended after a dash (e.g. `the file is damaged; delete it to start over`). */
  hint?: string;
  /** The error's code (default `config`). */
  code?: ConstructorParameters<typeof GpuSessionsError>[0];
}

/**
 * `text` (the contents of `file`) as the document `schema` describes; a text that is not JSON, or a field of the
 * wrong type, throws a GpuSessionsError `FILE: FIELD: what is wrong — HINT`.
 */
export function parseDocument<S extends z.ZodType>(schema: S, text: string, file: string, o: ReadDocumentOptions = {}): z.output<S> {
  const fail = (what: string): never => {
    throw new GpuSessionsError(o.code ?? 'config', `${file}: ${what}${o.hint ? ` — ${o.hint}` : ''}`, { file });
  };
  let doc: unknown;
  try {
    doc = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (e) {
    return fail(`not JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  const problem = documentProblem(schema, doc);
  if (problem) fail(problem);
  return doc as z.output<S>;
}
