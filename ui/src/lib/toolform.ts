// The call tester's logic, apart from its markup: a form generated from a tool's inputSchema
// when the schema is simple (top-level properties of type string, number, integer, boolean,
// or an enum), the arguments that form makes, validation against the whole schema before
// anything is sent, and how a result and its progress read.
//
// Validation uses @cfworker/json-schema: it interprets the schema instead of compiling it
// to code, so it runs under the app's Content-Security-Policy (no 'unsafe-eval').

import { type Schema, Validator } from "@cfworker/json-schema";
import type { CallProgress, CallResult, ContentBlock } from "../host/types";

export type FieldType = "string" | "number" | "integer" | "boolean" | "enum";

export interface Field {
  name: string;
  type: FieldType;
  required: boolean;
  description: string | null;
  /** `enum` only: the allowed values, as the schema lists them. */
  options: unknown[];
}

/** What a field holds while a person edits it: text for strings and numbers, a flag, an enum index. */
export type FieldValue = string | boolean;

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

function fieldOf(name: string, prop: unknown, required: boolean): Field | null {
  if (!isObject(prop)) return null;
  const description = typeof prop.description === "string" ? prop.description : null;
  if (Array.isArray(prop.enum) && prop.enum.every((v) => ["string", "number", "boolean"].includes(typeof v))) {
    return { name, type: "enum", required, description, options: prop.enum };
  }
  const type = prop.type;
  if (type === "string" || type === "number" || type === "integer" || type === "boolean") {
    return { name, type, required, description, options: [] };
  }
  return null;
}

/**
 * The form for `schema`, or null when it needs raw JSON: a schema that is not an object of
 * flat, simply typed properties (arrays, nested objects, unions, `$ref`s).
 */
export function formFields(schema: Json): Field[] | null {
  if (schema.type !== undefined && schema.type !== "object") return null;
  for (const k of ["oneOf", "anyOf", "allOf", "$ref", "if"]) if (k in schema) return null;
  const props = isObject(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required) ? schema.required.map(String) : [];
  const fields: Field[] = [];
  for (const [name, prop] of Object.entries(props)) {
    const field = fieldOf(name, prop, required.includes(name));
    if (!field) return null;
    fields.push(field);
  }
  return fields;
}

/** The starting values: the schema's `default` where it gives one. */
export function initialValues(fields: Field[], schema: Json): Record<string, FieldValue> {
  const props = isObject(schema.properties) ? schema.properties : {};
  const values: Record<string, FieldValue> = {};
  for (const f of fields) {
    const def = isObject(props[f.name]) ? (props[f.name] as Json).default : undefined;
    if (f.type === "boolean") values[f.name] = def === true;
    else if (f.type === "enum") values[f.name] = def === undefined ? "" : String(f.options.indexOf(def));
    else values[f.name] = def === undefined ? "" : String(def);
  }
  return values;
}

/** A problem with one argument (`field`), or with the arguments as a whole (`field` null). */
export interface ArgError {
  field: string | null;
  message: string;
}

/**
 * The arguments the form's values make: empty optional fields are left out, numbers parsed.
 * Errors are the values that cannot be converted; the schema is checked by `validate`.
 */
export function argsFromForm(fields: Field[], values: Record<string, FieldValue>): { args: Json; errors: ArgError[] } {
  const args: Json = {};
  const errors: ArgError[] = [];
  for (const f of fields) {
    const v = values[f.name];
    if (f.type === "boolean") {
      if (v === true || f.required) args[f.name] = v === true;
      continue;
    }
    const text = typeof v === "string" ? v : "";
    if (text === "") continue;
    if (f.type === "enum") args[f.name] = f.options[Number(text)];
    else if (f.type === "string") args[f.name] = text;
    else {
      const n = Number(text.trim());
      if (text.trim() === "" || !Number.isFinite(n)) errors.push({ field: f.name, message: `Not a number: “${text}”` });
      else if (f.type === "integer" && !Number.isInteger(n)) errors.push({ field: f.name, message: "Must be a whole number" });
      else args[f.name] = n;
    }
  }
  return { args, errors };
}

/** Raw JSON arguments: an object, or an error saying what is wrong. */
export function parseRaw(text: string): { args: Json } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text.trim() === "" ? "{}" : text);
  } catch (e) {
    return { error: `Not valid JSON: ${(e as Error).message}` };
  }
  if (!isObject(value)) return { error: "The arguments must be a JSON object, like {\"path\": \"/tmp\"}." };
  return { args: value };
}

/** The top-level property an error's `instanceLocation` points into (`#/path/0` → `path`). */
function fieldOfLocation(location: string): string | null {
  const [, first] = location.split("/");
  return first === undefined || first === "" ? null : decodeURIComponent(first.replaceAll("~1", "/").replaceAll("~0", "~"));
}

/**
 * Checks `args` against the tool's inputSchema. Missing required properties are reported on
 * their field; other errors on the property they are about, the innermost message first;
 * what concerns the object as a whole has `field` null. A schema the validator cannot read
 * is not a reason to refuse the call: the server decides.
 */
export function validate(schema: Json, args: Json): ArgError[] {
  let result;
  try {
    // A copy: the validator annotates the schema it is given (and a reactive proxy cannot be
    // structured-cloned).
    const copy = JSON.parse(JSON.stringify(schema)) as Schema;
    result = new Validator(copy, "2020-12", false).validate(args);
  } catch {
    return [];
  }
  if (result.valid) return [];
  const errors: ArgError[] = [];
  const required = Array.isArray(schema.required) ? schema.required.map(String) : [];
  for (const name of required) {
    if (!(name in args)) errors.push({ field: name, message: "Required" });
  }
  const seen = new Set(errors.map((e) => e.field));
  // Deepest first: "Instance type "string" is invalid" beats "Property "a" does not match schema".
  const units = [...result.errors].sort((a, b) => b.instanceLocation.length - a.instanceLocation.length);
  for (const u of units) {
    const field = fieldOfLocation(u.instanceLocation);
    if (field === null) {
      if (u.keyword === "required" || u.keyword === "properties") continue;
      errors.push({ field: null, message: u.error });
    } else if (!seen.has(field)) {
      seen.add(field);
      errors.push({ field, message: u.error });
    }
  }
  return errors;
}

/** "3 of 5", or "3" when the server gave no total. */
export function progressText(p: CallProgress): string {
  const n = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(1));
  return p.total !== null ? `${n(p.progress)} of ${n(p.total)}` : n(p.progress);
}

/** The fraction done, for a progress bar; null when the total is unknown. */
export function progressFraction(p: CallProgress): number | null {
  if (p.total === null || p.total <= 0) return null;
  return Math.min(1, Math.max(0, p.progress / p.total));
}

/** A call's result as the tester reads it; anything that is not a CallToolResult is shown as JSON. */
export function asCallResult(value: unknown): CallResult {
  return isObject(value) ? (value as CallResult) : { content: [{ type: "text", text: JSON.stringify(value) }] };
}

/** How one content block is shown: text as text, images inline, anything else as JSON. */
export type BlockView =
  | { kind: "text"; text: string }
  | { kind: "image"; src: string; alt: string }
  | { kind: "json"; label: string; json: string };

export function blockView(block: ContentBlock): BlockView {
  if (block.type === "text" && typeof block.text === "string") return { kind: "text", text: block.text };
  if (block.type === "image" && typeof block.data === "string" && typeof block.mimeType === "string") {
    return { kind: "image", src: `data:${block.mimeType};base64,${block.data}`, alt: `image (${block.mimeType})` };
  }
  return { kind: "json", label: block.type, json: JSON.stringify(block, null, 2) };
}

/** A call's duration: "840 ms", "2.4 s". */
export function durationText(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}
