// The console's JSON Schema validator: @cfworker/json-schema, which interprets a schema instead of compiling it
// to a function, so the page needs no CSP 'unsafe-eval' (Ajv's `compile` builds code with `new Function`).
// Draft 2020-12, as the server validates (agentturn/forms/validation.py); formats are ajv-formats' own definitions
// (regular expressions and plain functions, no code generation) except those formats.mjs defines again as the
// JSON Schema Test Suite wants them, plus rjsf's `data-url` and `color`: what agentturn/forms/formats.py checks. tests/differential/test_browser_validator.py
// compares its answers with the server's on the differential corpus.
//
// `validator` below implements rjsf's ValidatorType, so react-jsonschema-form runs on it unchanged; its errors
// are shaped like Ajv's (keyword, instancePath, params) so form_messages.mjs says them in the server's words.
import { Validator, format as FORMATS } from "@cfworker/json-schema";
import { fullFormats } from "ajv-formats/dist/formats.js";
import { SUITE_FORMATS } from "./formats.mjs";
import { toErrorList, toErrorSchema } from "@rjsf/utils";

// Copied from @rjsf/validator-ajv8's createAjvInstance (which would pull Ajv into the bundle).
const COLOR_FORMAT_REGEX =
  /^(#?([0-9A-Fa-f]{3}){1,2}\b|aqua|black|blue|fuchsia|gray|green|lime|maroon|navy|olive|orange|purple|red|silver|teal|white|yellow|(rgb\(\s*\b([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])\b\s*,\s*\b([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])\b\s*,\s*\b([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])\b\s*\))|(rgb\(\s*(\d?\d%|100%)+\s*,\s*(\d?\d%|100%)+\s*,\s*(\d?\d%|100%)+\s*\)))$/;
const DATA_URL_FORMAT_REGEX = /^data:([a-z]+\/[a-z0-9-+.]+)?;(?:name=(.*);)?base64,(.*)$/;

/** A string check from an ajv-formats definition; number formats (int32, float...) are checked apart. */
function stringCheck(definition) {
  if (definition instanceof RegExp) return (s) => definition.test(s);
  if (typeof definition === "function") return definition;
  if (definition === true) return () => true;
  if (definition && typeof definition === "object") {
    if (definition.type && definition.type !== "string") return null;
    if (definition.async) return null;
    return stringCheck(definition.validate);
  }
  return null;
}

const NUMBER_FORMATS = {};
for (const key of Object.keys(FORMATS)) delete FORMATS[key];
// ajv-formats' definitions, with those it gets wrong (by the JSON Schema Test Suite) or slowly replaced by
// formats.mjs, which defines them as the server does.
const DEFINITIONS = { ...fullFormats, ...SUITE_FORMATS, "data-url": DATA_URL_FORMAT_REGEX, color: COLOR_FORMAT_REGEX };
for (const [name, definition] of Object.entries(DEFINITIONS)) {
  if (definition && typeof definition === "object" && definition.type === "number") {
    NUMBER_FORMATS[name] = definition.validate;
    continue;
  }
  const check = stringCheck(definition);
  if (check) FORMATS[name] = check;
}

const cache = new WeakMap();

function validatorFor(schema) {
  let v = cache.get(schema);
  if (!v) {
    v = new Validator(schema, "2020-12", false);
    cache.set(schema, v);
  }
  return v;
}

function pointerGet(root, pointer) {
  if (!pointer.startsWith("#")) return undefined;
  let node = root;
  for (const raw of pointer.slice(1).split("/").slice(1)) {
    const part = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (node === null || typeof node !== "object") return undefined;
    node = node[part];
  }
  return node;
}

function instancePointer(location) {
  const pointer = location.startsWith("#") ? location.slice(1) : location;
  return pointer
    .split("/")
    .map((part) => decodeURIComponent(part))
    .join("/");
}

// Keywords whose errors only say "something inside failed": the inner errors say what.
const WRAPPERS = new Set([
  "properties",
  "patternProperties",
  "items",
  "prefixItems",
  "allOf",
  "$ref",
  "$dynamicRef",
  "if",
  "then",
  "else",
  "dependentSchemas",
  "additionalItems",
]);

/** Number formats (ajv-formats' int32, int64, float, double), which cfworker leaves to the caller. */
function numberFormatErrors(schema, data, root, location = "#", instance = "#") {
  const errors = [];
  if (!schema || typeof schema !== "object") return errors;
  if (typeof data === "number" && typeof schema.format === "string" && NUMBER_FORMATS[schema.format]) {
    if (!NUMBER_FORMATS[schema.format](data)) {
      errors.push({ instanceLocation: instance, keyword: "format", keywordLocation: `${location}/format`, error: "format" });
    }
  }
  if (data && typeof data === "object" && !Array.isArray(data) && schema.properties) {
    for (const [key, sub] of Object.entries(schema.properties)) {
      if (Object.hasOwn(data, key)) {
        errors.push(...numberFormatErrors(sub, data[key], root, `${location}/properties/${key}`, `${instance}/${key}`));
      }
    }
  }
  if (Array.isArray(data) && schema.items && typeof schema.items === "object") {
    data.forEach((item, i) => errors.push(...numberFormatErrors(schema.items, item, root, `${location}/items`, `${instance}/${i}`)));
  }
  return errors;
}

function hasNumberFormats(schema) {
  return JSON.stringify(schema).match(/"format":"(int32|int64|float|double)"/) !== null;
}

/** cfworker's answer: {valid, errors: [{instanceLocation, keyword, keywordLocation, error}]}. */
export function rawValidate(schema, data) {
  const result = validatorFor(schema).validate(data);
  const errors = [...result.errors];
  if (hasNumberFormats(schema)) errors.push(...numberFormatErrors(schema, data, schema));
  return { valid: errors.length === 0, errors };
}

/** True when ``data`` is valid against ``schema``. */
export function isValidData(schema, data) {
  return rawValidate(schema, data).valid;
}

const quoted = (text) => {
  const match = /"([^"]*)"/.exec(text);
  return match ? match[1] : undefined;
};

/** One cfworker error as Ajv would have reported it (the fields form_messages.mjs and rjsf read). */
function asAjvError(root, error) {
  const keywordLocation = error.keywordLocation;
  const slash = keywordLocation.lastIndexOf("/");
  const parentLocation = keywordLocation.slice(0, slash);
  const parent = pointerGet(root, parentLocation) ?? {};
  const value = parent && typeof parent === "object" ? parent[error.keyword] : undefined;
  const instancePath = instancePointer(error.instanceLocation);
  const params = {};
  let keyword = error.keyword;
  switch (keyword) {
    case "required":
      params.missingProperty = quoted(error.error);
      break;
    case "dependentRequired": {
      const names = [...error.error.matchAll(/"([^"]*)"/g)].map((m) => m[1]);
      params.property = names[0];
      params.missingProperty = names[1];
      params.deps = names[1];
      break;
    }
    case "type":
      params.type = Array.isArray(value) ? value.join(",") : value;
      break;
    case "enum":
      params.allowedValues = value;
      break;
    case "const":
      params.allowedValue = value;
      break;
    case "format":
      params.format = value;
      break;
    case "multipleOf":
      params.multipleOf = value;
      break;
    case "uniqueItems": {
      const numbers = [...error.error.matchAll(/\d+/g)].map((m) => Number(m[0]));
      params.i = numbers[1] ?? 0;
      params.j = numbers[0] ?? 0;
      break;
    }
    case "contains":
    case "minContains":
    case "maxContains":
      keyword = "contains";
      if (parent.minContains !== undefined) params.minContains = parent.minContains;
      if (parent.maxContains !== undefined) params.maxContains = parent.maxContains;
      break;
    case "oneOf": {
      const matches = /\((\d+) matches\)/.exec(error.error);
      if (matches && Number(matches[1]) > 1) params.passingSchemas = [];
      break;
    }
    case "additionalProperties":
    case "unevaluatedProperties":
      params[keyword === "additionalProperties" ? "additionalProperty" : "unevaluatedProperty"] = quoted(error.error);
      break;
    case "propertyNames": {
      // cfworker: `Property name "${key}" does not match schema.` (the key itself may hold quotes).
      const prefix = 'Property name "';
      const suffix = '" does not match schema.';
      if (error.error.startsWith(prefix) && error.error.endsWith(suffix)) {
        params.propertyName = error.error.slice(prefix.length, -suffix.length);
      }
      break;
    }
    case "false":
      keyword = "false schema";
      break;
    default:
      params.limit = value;
  }
  return { instancePath, keyword, params, schemaPath: keywordLocation, message: error.error, parentSchema: parent };
}

/** Whether Ajv would report this error itself (cfworker also reports the keywords that contain a failure). */
function isLeaf(root, error) {
  if (WRAPPERS.has(error.keyword)) return false;
  const location = error.keywordLocation;
  if (error.keyword === "additionalProperties" || error.keyword === "unevaluatedProperties") {
    // "not a field of this form" only when the keyword is `false`; otherwise its subschema's errors say it.
    return pointerGet(root, location) === false;
  }
  return true;
}

/** The `false` subschema an undeclared property met: the same refusal as its keyword's, said once. */
function undeclaredLocations(errors) {
  const locations = new Set();
  for (const error of errors) {
    if (error.keyword !== "additionalProperties" && error.keyword !== "unevaluatedProperties") continue;
    const name = quoted(error.error);
    if (name !== undefined) locations.add(`${error.instanceLocation}/${encodeURIComponent(name)}`);
    if (name !== undefined) locations.add(`${error.instanceLocation}/${name}`);
  }
  return locations;
}

/** Ajv-shaped errors of ``data`` against ``schema``; [] when it is valid. */
export function ajvErrors(schema, data) {
  const { errors } = rawValidate(schema, data);
  const seen = new Set();
  const undeclared = undeclaredLocations(errors);
  return errors
    .filter((error) => isLeaf(schema, error))
    .filter((error) => !(error.keyword === "false" && undeclared.has(error.instanceLocation)))
    .map((error) => asAjvError(schema, error))
    .filter((error) => {
      const key = `${error.instancePath}|${error.schemaPath}|${error.params.missingProperty ?? ""}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
}

/** Ajv errors as rjsf's RJSFValidationError (what rjsf's Ajv validator makes of them). */
function toRjsfErrors(errors) {
  return errors.map(({ instancePath, keyword, params, schemaPath, message }) => {
    let property = instancePath.replace(/\//g, ".");
    if ("missingProperty" in params) property = property ? `${property}.${params.missingProperty}` : params.missingProperty;
    return { name: keyword, property, message, params, stack: `${property} ${message}`.trim(), schemaPath };
  });
}

/** $refs of a subschema point into the root (rjsf asks about parts of a form's schema). */
function withRootDefinitions(schema, rootSchema) {
  if (!rootSchema || schema === rootSchema || typeof schema !== "object") return schema;
  return { ...schema, $defs: { ...(rootSchema.$defs || {}), ...(schema.$defs || {}) }, definitions: rootSchema.definitions };
}

/** rjsf's ValidatorType on cfworker. */
export const validator = {
  validateFormData(formData, schema, customValidate, transformErrors, uiSchema) {
    let errors = toRjsfErrors(ajvErrors(schema, formData ?? {}));
    if (typeof transformErrors === "function") errors = transformErrors(errors, uiSchema);
    const errorSchema = toErrorSchema(errors);
    return { errors, errorSchema };
  },
  toErrorList(errorSchema, fieldPath) {
    return toErrorList(errorSchema, fieldPath);
  },
  isValid(schema, formData, rootSchema) {
    try {
      return isValidData(withRootDefinitions(schema, rootSchema), formData);
    } catch {
      return false;
    }
  },
  rawValidation(schema, formData) {
    try {
      return { errors: ajvErrors(schema, formData), validationError: undefined };
    } catch (error) {
      return { errors: undefined, validationError: error };
    }
  },
  reset() {},
};
