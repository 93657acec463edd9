// Builds shared/agentturn/web/examples/copilotkit.js (the CopilotKit example page's script: React and CopilotKit's
// headless hooks bundled) from the packages this folder's package.json pins. Run here: `npm install && npm run build`
// (the repository root's esbuild is used); `--check` verifies the committed bundle is what they build.
import { build } from "esbuild";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const output = join(root, "shared", "agentturn", "web", "examples", "copilotkit.js");
const result = await build({
  absWorkingDir: here,
  entryPoints: [join(here, "app.jsx")],
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020"],
  jsx: "automatic",
  define: { "process.env.NODE_ENV": '"production"' },
  legalComments: "none",
  write: false,
  logLevel: "warning",
});
const content =
  "/*! agentturn CopilotKit example: @copilotkit/react-core, @copilotkit/core, @copilotkit/shared (MIT), " +
  "@ag-ui/client (MIT), React (MIT) and their dependencies */\n" +
  result.outputFiles[0].text;
if (process.argv.includes("--check")) {
  if (!existsSync(output) || readFileSync(output, "utf8") !== content) {
    console.error(`stale: ${relative(root, output)}; run npm run build in examples/copilotkit`);
    process.exit(1);
  }
} else {
  writeFileSync(output, content);
  console.log(`wrote ${relative(root, output)} (${content.length} bytes)`);
}
