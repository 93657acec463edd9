// The console's only way to build DOM. Strings always become text nodes (never markup), so nothing that
// comes from a schema, a model or a tool can turn into HTML. No markup-parsing DOM API is used anywhere
// in the console (a test greps for it).

/**
 * el("p", {class: "x", dataset: {id: "1"}, onclick: fn}, "text", childNode, [more, children])
 * Attribute values are set with setAttribute (event handlers only as functions, via addEventListener).
 */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "dataset") Object.assign(node.dataset, value);
    else if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else if (name === "text") node.textContent = String(value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, ...children);
  return node;
}

/** Appends children (strings as text nodes; null, undefined and false skipped; arrays flattened). */
export function append(node, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node) {
  node.replaceChildren();
  return node;
}

/** JSON for people: pretty, and as a text node inside <pre>. */
export function jsonBlock(value, attributes = {}) {
  return el("pre", { class: "json", ...attributes }, JSON.stringify(value, null, 2));
}

export function time(iso) {
  if (!iso) return null;
  const date = new Date(iso);
  return el("time", { datetime: iso, title: iso }, Number.isNaN(date.getTime()) ? iso : date.toLocaleString());
}
