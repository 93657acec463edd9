// Markdown in the model's text: marked (GFM) parses it, DOMPurify sanitises the result into a DOM fragment,
// with an allow-list far narrower than DOMPurify's default: text formatting, lists, code, quotes, tables and
// links to http(s)/mailto only. Raw HTML the model writes is shown as text (never parsed), images become
// their alt text (no request leaves the page for a model-chosen URL), links open in a new tab without a
// referrer. Bundled by build.mjs into ../vendor/markdown.js as `window.AgentturnMarkdown`.
// tests/e2e/test_markdown.py renders a hostile corpus and checks that nothing in the result can run code.
import { Marked } from "marked";
import DOMPurify from "dompurify";

const escapeHtml = (text) =>
  String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

const marked = new Marked({ gfm: true, breaks: true, async: false });
marked.use({
  renderer: {
    html: (token) => escapeHtml(token.text ?? token.raw ?? ""),
    image: (token) => escapeHtml(token.text || token.href || ""),
    // GFM task-list items would be <input> elements: a plain box character instead.
    checkbox: (token) => (token.checked ? "☑ " : "☐ "),
  },
});

export const ALLOWED_TAGS = [
  "p", "br", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li", "a", "hr",
  "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td",
];
export const ALLOWED_ATTR = ["href", "title", "start", "align"];
const SAFE_URL = /^(?:(?:https?|mailto):|#)/i;

const purify = DOMPurify(window);
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.nodeName === "A") {
    const href = node.getAttribute("href") || "";
    if (!SAFE_URL.test(href.trim())) node.removeAttribute("href");
    node.setAttribute("rel", "noopener noreferrer nofollow");
    node.setAttribute("target", "_blank");
  }
});

const CONFIG = {
  ALLOWED_TAGS,
  ALLOWED_ATTR: [...ALLOWED_ATTR, "rel", "target"],
  ALLOWED_URI_REGEXP: SAFE_URL,
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};

/** The model's markdown as a sanitised DocumentFragment (never a string of markup). */
export function render(text) {
  const html = marked.parse(String(text ?? ""));
  return purify.sanitize(html, CONFIG);
}

window.AgentturnMarkdown = Object.freeze({ render, library: "marked + DOMPurify" });
