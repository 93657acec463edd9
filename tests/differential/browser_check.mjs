// Validates a batch of (schema, data) cases with the console's browser validator (web/src/validator.mjs:
// @cfworker/json-schema with ajv-formats' formats, no code generation), bundled with the same esbuild plugin as
// the console's vendor file. Same input and output as ajv_check.mjs: {"cases": [{"schema", "data": [...]}]} on
// stdin; per case one answer per datum: true, false, or {"error"}. Run by tests/differential/test_browser_validator.py.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import { cfworkerMultipleOf } from "../../shared/agentturn/web/src/patches.mjs";

const entry = fileURLToPath(new URL("../../shared/agentturn/web/src/validator.mjs", import.meta.url));
const bundled = await build({
  entryPoints: [entry],
  bundle: true,
  format: "esm",
  platform: "neutral",
  mainFields: ["module", "main"],
  write: false,
  logLevel: "warning",
  plugins: [cfworkerMultipleOf],
});
const { isValidData } = await import(
  `data:text/javascript;base64,${Buffer.from(bundled.outputFiles[0].text).toString("base64")}`
);

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { cases } = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const answers = cases.map(({ schema, data }) =>
  data.map((datum) => {
    try {
      return isValidData(schema, datum);
    } catch (error) {
      return { error: String(error.message) };
    }
  }),
);
process.stdout.write(JSON.stringify(answers));
