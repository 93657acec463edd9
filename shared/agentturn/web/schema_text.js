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

const ACRONYMS = { id: "ID", url: "URL", uri: "URI", api: "API", ip: "IP" };

/** A field key as a person reads it when the schema gives no title: "orderId" and "order_id" → "Order ID". */
export function humanise(key) {
  const words = String(key)
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .replace(/[_\-.]+/g, " ")
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    // An acronym (ID, URL) stays as written; other words are lower-cased, the first one capitalised.
    .map((word) => (/^[A-Z0-9]{2,}$/.test(word) ? word : ACRONYMS[word.toLowerCase()] || word.toLowerCase()));
  if (!words.length) return String(key);
  words[0] = words[0].charAt(0).toUpperCase() + words[0].slice(1);
  return words.join(" ");
}

/** The label of field `key` of an object schema: its title, else the key humanised. */
export function fieldLabel(schema, key) {
  const title = schema?.properties?.[key]?.title;
  return typeof title === "string" && title.trim() ? title : humanise(key);
}

/** `schema` with a title on every property that has none (the key humanised), at any depth: the form renderer
 * labels fields and the console's messages name them by title. Titles do not change what validates. */
export function withTitles(schema) {
  if (!schema || typeof schema !== "object" || Array.isArray(schema)) return schema;
  const copy = { ...schema };
  if (schema.properties && typeof schema.properties === "object") {
    copy.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([key, sub]) => {
        const titled = withTitles(sub);
        return [key, titled && typeof titled === "object" && !titled.title ? { ...titled, title: humanise(key) } : titled];
      }),
    );
  }
  if (schema.items && typeof schema.items === "object" && !Array.isArray(schema.items)) copy.items = withTitles(schema.items);
  return copy;
}

/** The title of the field at a JSON Pointer ("/address/zip"), or the last segment when it has none. */
export function titleOf(schema, pointer) {
  let node = schema;
  let title = "";
  for (const segment of String(pointer).split("/").slice(1)) {
    const parent = node;
    node = node?.properties?.[segment] ?? node?.items;
    title = node?.title || (parent?.properties && segment in parent.properties ? humanise(segment) : segment);
  }
  return title || "The form";
}
