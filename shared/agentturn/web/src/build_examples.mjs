// Builds ../examples/agui.js (the AG-UI example page's script, with the official @ag-ui/client bundled) from the
// npm packages pinned in the repository's package.json. Run from the repository root: `npm run build:examples`;
// `--check` verifies the committed bundle is what the pinned packages build.
import { build } from "esbuild";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..", "..", "..");
const output = join(here, "..", "examples", "agui.js");
const result = await build({
  absWorkingDir: root,
  entryPoints: [join(here, "agui_example.mjs")],
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020"],
  legalComments: "none",
  write: false,
  logLevel: "warning",
});
const content =
  "/*! agentturn AG-UI example: @ag-ui/client (MIT) and its dependencies (rxjs Apache-2.0, uuid, zod, " +
  "fast-json-patch, compare-versions, untruncate-json: MIT) */\n" +
  result.outputFiles[0].text;
if (process.argv.includes("--check")) {
  if (!existsSync(output) || readFileSync(output, "utf8") !== content) {
    console.error(`stale: ${relative(root, output)}; run npm run build:examples`);
    process.exit(1);
  }
} else {
  writeFileSync(output, content);
  console.log(`wrote ${relative(root, output)} (${content.length} bytes)`);
}
