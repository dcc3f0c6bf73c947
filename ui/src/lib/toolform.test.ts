import { describe, expect, test } from "vitest";
import {
  argsFromForm,
  blockView,
  durationText,
  formFields,
  initialValues,
  parseRaw,
  progressFraction,
  progressText,
  validate,
} from "./toolform";

const LIST_ISSUES = {
  type: "object",
  properties: {
    owner: { type: "string", description: "Repository owner" },
    per_page: { type: "integer", minimum: 1, maximum: 100 },
    ratio: { type: "number" },
    draft: { type: "boolean" },
    state: { type: "string", enum: ["open", "closed"], default: "open" },
  },
  required: ["owner", "per_page"],
};

describe("formFields", () => {
  test("a flat schema becomes one field per property, with its type and required mark", () => {
    const fields = formFields(LIST_ISSUES)!;
    expect(fields.map((f) => [f.name, f.type, f.required])).toEqual([
      ["owner", "string", true],
      ["per_page", "integer", true],
      ["ratio", "number", false],
      ["draft", "boolean", false],
      ["state", "enum", false],
    ]);
    expect(fields[0]!.description).toBe("Repository owner");
    expect(fields[4]!.options).toEqual(["open", "closed"]);
  });

  test("anything not simple falls back to raw JSON", () => {
    const check = (schema: Record<string, unknown>) => expect(formFields(schema)).toBeNull();
    check({ type: "object", properties: { paths: { type: "array", items: { type: "string" } } } });
    check({ type: "object", properties: { opts: { type: "object" } } });
    check({ type: "object", properties: { a: { anyOf: [{ type: "string" }, { type: "number" }] } } });
    check({ oneOf: [{ type: "object" }] });
    check({ type: "array" });
    expect(formFields({ type: "object" })).toEqual([]);
  });

  test("defaults fill the first values", () => {
    const values = initialValues(formFields(LIST_ISSUES)!, LIST_ISSUES);
    expect(values).toEqual({ owner: "", per_page: "", ratio: "", draft: false, state: "0" });
  });
});

describe("argsFromForm and validate", () => {
  const fields = formFields(LIST_ISSUES)!;

  test("values convert to typed arguments; empty optional ones are left out", () => {
    const { args, errors } = argsFromForm(fields, { owner: "ada", per_page: "30", ratio: "", draft: true, state: "1" });
    expect(errors).toEqual([]);
    expect(args).toEqual({ owner: "ada", per_page: 30, draft: true, state: "closed" });
    expect(validate(LIST_ISSUES, args)).toEqual([]);
  });

  test("what cannot be a number is an error on its field", () => {
    const { errors } = argsFromForm(fields, { owner: "a", per_page: "2.5", ratio: "x1", draft: false, state: "" });
    expect(errors).toEqual([
      { field: "per_page", message: "Must be a whole number" },
      { field: "ratio", message: "Not a number: “x1”" },
    ]);
  });

  test("the schema is checked: missing required fields and bounds are reported per field", () => {
    expect(validate(LIST_ISSUES, { per_page: 500 })).toEqual([
      { field: "owner", message: "Required" },
      { field: "per_page", message: expect.stringContaining("100") },
    ]);
  });

  test("errors about the object as a whole have no field", () => {
    const schema = { type: "object", properties: {}, additionalProperties: false };
    const errors = validate(schema, { extra: 1 });
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => e.field === "extra" || e.field === null)).toBe(true);
  });

  test("a schema the validator cannot read does not block the call", () => {
    expect(validate({ $ref: "#/nowhere" }, {})).toEqual([]);
  });
});

describe("parseRaw", () => {
  test("an object parses; anything else says what is wrong", () => {
    expect(parseRaw('{"a": 1}')).toEqual({ args: { a: 1 } });
    expect(parseRaw("  ")).toEqual({ args: {} });
    expect(parseRaw("[1]")).toEqual({ error: expect.stringContaining("must be a JSON object") });
    expect(parseRaw("{a:1}")).toEqual({ error: expect.stringContaining("Not valid JSON") });
  });
});

describe("progress and results", () => {
  test("progress reads as n of total, with a fraction for the bar", () => {
    const p = { call_id: "c", progress: 3, total: 5, message: null };
    expect(progressText(p)).toBe("3 of 5");
    expect(progressFraction(p)).toBe(0.6);
    expect(progressText({ ...p, total: null })).toBe("3");
    expect(progressFraction({ ...p, total: null })).toBeNull();
    expect(progressText({ ...p, progress: 0.25, total: 1 })).toBe("0.3 of 1");
  });

  test("content blocks: text as text, images inline, others as JSON", () => {
    expect(blockView({ type: "text", text: "hi" })).toEqual({ kind: "text", text: "hi" });
    expect(blockView({ type: "image", data: "AAA", mimeType: "image/png" })).toEqual({
      kind: "image",
      src: "data:image/png;base64,AAA",
      alt: "image (image/png)",
    });
    expect(blockView({ type: "resource_link", uri: "file:///a" }).kind).toBe("json");
  });

  test("durations", () => {
    expect(durationText(840.4)).toBe("840 ms");
    expect(durationText(2400)).toBe("2.4 s");
  });
});
