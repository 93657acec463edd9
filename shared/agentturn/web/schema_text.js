// What a schema says to a person: option labels for enum values, field titles for paths. Labels come from
// `oneOf` of `{const, title}` (JSON Schema's own way, which the form renderer shows as a drop-down of titles)
// or from `x-enumNames` (a common extension, handed to the renderer as `ui:enumNames`).

function enumNames(schema) {
  const names = schema?.["x-enumNames"];
  return Array.isArray(schema?.enum) && Array.isArray(names) && names.length === schema.enum.length ? names : null;
}

/** The form renderer's uiSchema for `schema`: `ui:enumNames` wherever an enum has `x-enumNames` (the schema
 * itself is left as it is, so the browser validates exactly what the server validates). */
export function uiSchemaFor(schema) {
  if (!schema || typeof schema !== "object") return {};
  const ui = {};
  const names = enumNames(schema);
  if (names) ui["ui:enumNames"] = names.map(String);
  const choices = Array.isArray(schema.enum) || (Array.isArray(schema.oneOf) && schema.oneOf.every((c) => c && "const" in c));
  if (choices && schema.type !== "array") ui["ui:placeholder"] = "Choose…"; // an empty drop-down says what it wants
  if (Array.isArray(schema.items?.enum)) {
    const itemNames = enumNames(schema.items);
    if (itemNames) ui.items = { "ui:enumNames": itemNames.map(String) };
  } else if (schema.items && typeof schema.items === "object") {
    const items = uiSchemaFor(schema.items);
    if (Object.keys(items).length) ui.items = items;
  }
  for (const [key, sub] of Object.entries(schema.properties || {})) {
    const child = uiSchemaFor(sub);
    if (Object.keys(child).length) ui[key] = child;
  }
  return ui;
}

/** A value as a person reads it: the option's label, yes/no, or the text itself. */
export function labelOf(schema, value) {
  if (value === null || value === undefined) return "—";
  const names = enumNames(schema);
  if (names) {
    const index = schema.enum.findIndex((v) => JSON.stringify(v) === JSON.stringify(value));
    if (index >= 0) return String(names[index]);
  }
  for (const choice of schema?.oneOf || schema?.anyOf || []) {
    if (choice && typeof choice === "object" && "const" in choice && choice.title && JSON.stringify(choice.const) === JSON.stringify(value)) {
      return String(choice.title);
    }
  }
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** The title of the field at a JSON Pointer ("/address/zip"), or the last segment when it has none. */
export function titleOf(schema, pointer) {
  let node = schema;
  let title = "";
  for (const segment of String(pointer).split("/").slice(1)) {
    node = node?.properties?.[segment] ?? node?.items;
    title = node?.title || segment;
  }
  return title || "The form";
}
