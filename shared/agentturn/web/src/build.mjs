// Builds ../vendor/forms.js (the vendored form library), ../vendor/markdown.js (the markdown renderer and its
// sanitiser) and ../vendor/THIRD_PARTY_LICENSES.txt from the
// npm packages pinned in the repository's package.json. Deterministic: the same lock file gives the same
// bytes, which `node build.mjs --check` verifies (the test suite runs it) so the committed bundle never
// drifts from its source. Run from the repository root: `npm run build:web`.
import { build } from "esbuild";
import { readFileSync, writeFileSync, existsSync, readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { cfworkerMultipleOf } from "./patches.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const vendor = join(here, "..", "vendor");
const root = join(here, "..", "..", "..", "..");
const check = process.argv.includes("--check");

const BUNDLES = { "forms.js": "forms.jsx", "markdown.js": "markdown.mjs" };
const results = {};
for (const [output, entry] of Object.entries(BUNDLES)) {
  results[output] = await build({
    absWorkingDir: root,
    entryPoints: [join(here, entry)],
    bundle: true,
    minify: true,
    format: "iife",
    target: ["es2020"],
    jsx: "automatic",
    define: { "process.env.NODE_ENV": '"production"' },
    legalComments: "none",
    metafile: true,
    write: false,
    logLevel: "warning",
    plugins: [cfworkerMultipleOf],
  });
}

// Every npm package that ended up in a bundle, with its licence text.
const packages = new Map();
// What ended up in the output (tree-shaken inputs contribute no byte and need no licence).
const usedInputs = (result) =>
  Object.entries(Object.values(result.metafile.outputs)[0].inputs)
    .filter(([, use]) => use.bytesInOutput > 0)
    .map(([input]) => input);
const inputs = Object.values(results).flatMap(usedInputs);
for (const input of inputs) {
  // The innermost node_modules names the package (ajv has its own nested fast-uri, for one).
  const at = input.lastIndexOf("node_modules/");
  const match = at < 0 ? null : input.slice(at).match(/^node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (!match) continue;
  const dir = join(root, input.slice(0, at), "node_modules", match[1]);
  const meta = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const key = `${match[1]}@${meta.version}`;
  if (packages.has(key)) continue;
  const licenceFile = readdirSync(dir).find((f) => /^licen[cs]e/i.test(f));
  const text = licenceFile ? readFileSync(join(dir, licenceFile), "utf8").trim() : `License: ${meta.license}`;
  packages.set(key, { name: match[1], version: meta.version, license: meta.license, text });
}
const names = [...packages.keys()].sort();
const licences =
  "Third-party software bundled in forms.js and markdown.js (built by web/src/build.mjs from package-lock.json):\n\n" +
  names.map((k) => `== ${k} (${packages.get(k).license})\n\n${packages.get(k).text}\n`).join("\n");
function banner(result) {
  const used = names.filter((key) =>
    usedInputs(result).some((input) => input.includes(`node_modules/${packages.get(key).name}/`)),
  );
  return `/*! agentturn console vendor bundle: ${used.join(", ")}. Licences: THIRD_PARTY_LICENSES.txt */\n`;
}
const outputs = { "THIRD_PARTY_LICENSES.txt": licences };
for (const [output, result] of Object.entries(results)) outputs[output] = banner(result) + result.outputFiles[0].text;

let stale = false;
for (const [name, content] of Object.entries(outputs)) {
  const path = join(vendor, name);
  if (check) {
    if (!existsSync(path) || readFileSync(path, "utf8") !== content) {
      console.error(`stale: ${relative(root, path)} differs from what the pinned packages build; run npm run build:web`);
      stale = true;
    }
  } else {
    writeFileSync(path, content);
    console.log(`wrote ${relative(root, path)} (${content.length} bytes)`);
  }
}
process.exit(stale ? 1 : 0);
