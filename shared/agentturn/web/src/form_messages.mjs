// The words a person reads when the console's own checks (Ajv, in the browser) refuse a field: the same as
// the server's (agentturn/forms/wording.py), field named by its title, no code, no regular expressions.
// tests/differential/test_messages_agree.py checks both sides say the same thing for the same errors.

const TYPE_NAMES = {
  string: "text",
  integer: "a whole number",
  number: "a number",
  boolean: "yes or no",
  array: "a list",
  object: "a group of fields",
  null: "empty",
};

// What each format expects, as agentturn/forms/wording.py (FORMAT_EXPECTED) words it.
export const FORMAT_LABELS = {
  date: "a date such as 2024-05-31",
  time: "a time in the form HH:MM:SS with its offset, such as 09:30:00+01:00 or 09:30:00Z",
  "date-time": "a date and time such as 2024-05-31T09:30:00Z",
  duration: "a duration such as P3DT4H",
  uri: "a full web address such as https://example.com/page",
  "uri-reference": "a web address or a part of one",
  "uri-template": "a URI template such as /orders/{id}",
  url: "a web address such as https://example.com",
  email: "an email address such as name@example.com",
  hostname: "a host name such as example.com",
  ipv4: "an IPv4 address such as 192.0.2.1",
  ipv6: "an IPv6 address such as 2001:db8::1",
  regex: "a regular expression",
  uuid: "an identifier such as 123e4567-e89b-12d3-a456-426614174000",
  "json-pointer": "a JSON pointer such as /a/b",
  "json-pointer-uri-fragment": "a JSON pointer fragment such as #/a/b",
  "relative-json-pointer": "a relative JSON pointer such as 1/a",
  byte: "base64-encoded data",
  int32: "a whole number between -2147483648 and 2147483647",
  int64: "a whole number",
  float: "a number",
  double: "a number",
  password: "a password",
  binary: "data",
  "data-url": "a file (a data: URL with base64 data)",
  color: "a colour such as #ff8800",
};

// Python's json.dumps(value, ensure_ascii=False, separators=(", ", ": ")) for what a schema can hold.
function json(value) {
  if (Array.isArray(value)) return `[${value.map(json).join(", ")}]`;
  if (value && typeof value === "object") {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${json(v)}`)
      .join(", ")}}`;
  }
  if (typeof value === "number" && Number.isInteger(value) && !Object.is(value, -0)) return String(value);
  return JSON.stringify(value);
}

export function show(value) {
  return typeof value === "string" ? `“${value}”` : json(value);
}

const count = (n, one, many) => `${n} ${n === 1 ? one : many}`;

export const say = {
  required: (label) => `${label} is required.`,
  undeclared: (name) => `“${name}” is not a field of this form.`,
  notAllowed: (label) => `${label} is not allowed here.`,
  wrongType: (label, types) => `${label} must be ${types.map((t) => TYPE_NAMES[t] ?? t).join(" or ")}.`,
  enum: (label, values) =>
    values.length === 1 ? say.const(label, values[0]) : `${label} must be one of: ${values.map(show).join(", ")}.`,
  const: (label, value) => `${label} must be ${show(value)}.`,
  minLength: (label, limit) =>
    limit === 1 ? `${label} must not be empty.` : `${label} must be at least ${count(limit, "character", "characters")} long.`,
  maxLength: (label, limit) => `${label} must be at most ${count(limit, "character", "characters")} long.`,
  pattern: (label, description, example) => {
    let text = `${label} is not in the expected form`;
    if (description) text += ` (${description.trim().replace(/\.+$/, "")})`;
    if (example !== undefined && example !== null) text += `, for example ${show(example)}`;
    return `${text}.`;
  },
  format: (label, expected) => `${label} must be ${expected}.`,
  minimum: (label, limit, exclusive) => `${label} must be ${exclusive ? "more than" : "at least"} ${show(limit)}.`,
  maximum: (label, limit, exclusive) => `${label} must be ${exclusive ? "less than" : "at most"} ${show(limit)}.`,
  multipleOf: (label, step) => `${label} must be a multiple of ${show(step)}.`,
  minItems: (label, limit) => `${label} must have at least ${count(limit, "entry", "entries")}.`,
  maxItems: (label, limit) => `${label} must have at most ${count(limit, "entry", "entries")}.`,
  uniqueItems: (label, first, second) => `${label} has the same entry twice (entries ${first + 1} and ${second + 1}).`,
  minContains: (label, limit) => `${label} must have at least ${count(limit, "matching entry", "matching entries")}.`,
  maxContains: (label, limit) => `${label} must have at most ${count(limit, "matching entry", "matching entries")}.`,
  minProperties: (label, limit) => `${label} must have at least ${count(limit, "field", "fields")} filled in.`,
  maxProperties: (label, limit) => `${label} must have at most ${count(limit, "field", "fields")} filled in.`,
  dependentRequired: (label, trigger) => `${label} is required when ${trigger} is given.`,
  propertyName: (name) => `“${name}” is not an allowed name here.`,
  anyOf: (label) => `${label} does not match any of the allowed choices.`,
  oneOfMany: (label) => `${label} matches more than one of the choices; it must match exactly one.`,
  not: (label) => `${label} has a value that is not allowed.`,
};

function resolve(root, node) {
  for (let hops = 0; node && typeof node === "object" && typeof node.$ref === "string" && hops < 8; hops++) {
    if (node.title) return node;
    const parts = node.$ref === "#" ? [] : node.$ref.slice(2).split("/");
    let target = root;
    for (const part of parts) target = target?.[part.replace(/~1/g, "/").replace(/~0/g, "~")];
    if (!target || typeof target !== "object") return node;
    node = target;
  }
  return node && typeof node === "object" ? node : {};
}

/** The schema at an instance path (".a.0.b" or "/a/0/b") and the label a person knows that value by. */
export function fieldAt(root, path) {
  const segments = segmentsOf(path);
  let node = resolve(root, root);
  let label = "The form";
  for (const segment of segments) {
    const properties = node.properties ?? {};
    if (Object.hasOwn(properties, segment)) {
      node = resolve(root, properties[segment]);
      label = node.title || segment;
    } else if (/^\d+$/.test(segment) && (node.items !== undefined || node.prefixItems !== undefined)) {
      const index = Number(segment);
      const raw = node.prefixItems?.[index] ?? node.items ?? {};
      const title = raw && typeof raw === "object" ? raw.title : undefined;
      node = resolve(root, raw);
      label = title ? `${title} ${index + 1}` : `${label}, entry ${index + 1}`;
    } else {
      node = {};
      label = segment;
    }
  }
  return { schema: node, label };
}

const segmentsOf = (path) =>
  String(path ?? "")
    .split(/[./]/)
    .filter((s) => s !== "");

function messageFor(root, error) {
  const params = error.params ?? {};
  const path = String(error.property ?? "");
  // rjsf appends the missing property to the path of `required`-like errors: the object is its parent.
  const objectPath = "missingProperty" in params ? segmentsOf(path).slice(0, -1).join(".") : path;
  const { schema, label } = fieldAt(root, objectPath);
  switch (error.name) {
    case "required":
      return say.required(fieldAt(root, path).label);
    case "dependentRequired":
      return say.dependentRequired(fieldAt(root, path).label, fieldAt(root, `${objectPath}.${params.property}`).label);
    case "type":
      return say.wrongType(label, String(params.type).split(","));
    case "enum":
      return say.enum(label, params.allowedValues ?? []);
    case "const":
      return say.const(label, params.allowedValue);
    case "minLength":
      return say.minLength(label, params.limit);
    case "maxLength":
      return say.maxLength(label, params.limit);
    case "pattern":
      return say.pattern(label, schema.description, Array.isArray(schema.examples) ? schema.examples[0] : undefined);
    case "format":
      return say.format(label, FORMAT_LABELS[params.format] ?? params.format);
    case "minimum":
    case "exclusiveMinimum":
      return say.minimum(label, params.limit, error.name === "exclusiveMinimum");
    case "maximum":
    case "exclusiveMaximum":
      return say.maximum(label, params.limit, error.name === "exclusiveMaximum");
    case "multipleOf":
      return say.multipleOf(label, params.multipleOf);
    case "minItems":
      return say.minItems(label, params.limit);
    case "maxItems":
      return say.maxItems(label, params.limit);
    case "uniqueItems":
      return say.uniqueItems(label, params.j, params.i);
    case "contains":
      return params.maxContains !== undefined && params.minContains === undefined
        ? say.maxContains(label, params.maxContains)
        : say.minContains(label, params.minContains ?? 1);
    case "minProperties":
      return say.minProperties(label, params.limit);
    case "maxProperties":
      return say.maxProperties(label, params.limit);
    case "additionalProperties":
      return say.undeclared(params.additionalProperty);
    case "unevaluatedProperties":
      return say.undeclared(params.unevaluatedProperty);
    case "propertyNames":
      return say.propertyName(params.propertyName);
    case "anyOf":
      return say.anyOf(label);
    case "oneOf":
      return params.passingSchemas ? say.oneOfMany(label) : say.anyOf(label);
    case "not":
      return say.not(label);
    case "false schema":
    case "unevaluatedItems":
      return say.notAllowed(label);
    default:
      return error.message;
  }
}

// Ajv reports an `if` that chose a branch as an error of its own besides the branch's errors; the server,
// like a person, only cares about the branch. Errors of the name a `propertyNames` refused are likewise
// said once, as "not an allowed name".
const SILENT = new Set(["if"]);
// Errors inside a condition are not problems of their own: the server reports the condition ("does not match
// any of the allowed choices", "must have at least 1 matching entry"), and so does the console.
const INSIDE_A_CONDITION = /\/(anyOf|oneOf|contains|propertyNames)\//;

/** rjsf's `transformErrors` for a form's schema: each error's message in the server's words. */
export function transformErrorsFor(schema) {
  return (errors) =>
    errors
      .filter(
        (error) =>
          !SILENT.has(error.name) &&
          !INSIDE_A_CONDITION.test(String(error.schemaPath ?? "")),
      )
      .map((error) => {
        const message = messageFor(schema, error);
        return { ...error, message, stack: message };
      });
}
