// What the differential checks that run the console's code under Node share: the console's own modules
// (shared/agentturn/web/src/), bundled as its vendor build bundles them (esbuild with the same plugin, no code
// generation) and imported from the bundle, and their input, {"cases": [...]} as JSON on stdin.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import { cfworkerMultipleOf } from "../../shared/agentturn/web/src/patches.mjs";

const SOURCES = fileURLToPath(new URL("../../shared/agentturn/web/src/", import.meta.url));

// The module namespace of `source`: ES module text whose imports are resolved in web/src/.
export async function importConsoleModules(source) {
  const bundled = await build({
    stdin: { contents: source, resolveDir: SOURCES, loader: "js" },
    bundle: true,
    format: "esm",
    platform: "neutral",
    mainFields: ["module", "main"],
    write: false,
    logLevel: "warning",
    plugins: [cfworkerMultipleOf],
  });
  return import(`data:text/javascript;base64,${Buffer.from(bundled.outputFiles[0].text).toString("base64")}`);
}

export async function readCases() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString("utf8")).cases;
}
