// The console's own error messages for a batch of (schema, data) cases: the console's validator (web/src/
// validator.mjs: @cfworker/json-schema, bundled with the same esbuild plugin as the console) with the console's
// transformErrors (web/src/form_messages.mjs), exactly as web/src/forms.jsx wires them into rjsf. Reads
// {"cases": [{"schema", "data"}]} on stdin, writes one list of messages per case. Run by test_messages_agree.py.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import { cfworkerMultipleOf } from "../../shared/agentturn/web/src/patches.mjs";

const src = fileURLToPath(new URL("../../shared/agentturn/web/src/", import.meta.url));
const bundled = await build({
  stdin: {
    contents:
      'export { validator } from "./validator.mjs";\nexport { transformErrorsFor } from "./form_messages.mjs";\n',
    resolveDir: src,
    loader: "js",
  },
  bundle: true,
  format: "esm",
  platform: "neutral",
  mainFields: ["module", "main"],
  write: false,
  logLevel: "warning",
  plugins: [cfworkerMultipleOf],
});
const { validator, transformErrorsFor } = await import(
  `data:text/javascript;base64,${Buffer.from(bundled.outputFiles[0].text).toString("base64")}`
);

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { cases } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const answers = cases.map(({ schema, data }) => {
  const { errors } = validator.validateFormData(data, schema, undefined, transformErrorsFor(schema));
  return errors.map((error) => error.message);
});
process.stdout.write(JSON.stringify(answers));
