// Validates a batch of (schema, data) cases with the console's validator: Ajv 8 built exactly as
// @rjsf/validator-ajv8 builds it (its createAjvInstance: ajv-formats, `data-url`, `color`, its options), with the
// draft 2020-12 class the console uses (web/src/forms.jsx). Reads {"cases": [{"schema", "data": [...]}]} as JSON
// on stdin and writes, for each case, one answer per datum: true, false, or {"error": "..."} when Ajv cannot
// compile the schema or validating throws. Run by tests/differential/test_ajv_agreement.py.
import Ajv2020 from "ajv/dist/2020.js";
import createAjvInstance from "@rjsf/validator-ajv8/lib/createAjvInstance.js";
import { SUITE_FORMATS } from "../../shared/agentturn/web/src/formats.mjs";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { cases } = JSON.parse(Buffer.concat(chunks).toString("utf8"));

// One instance, as in the console (its validator keeps one Ajv for every form it shows), with the formats
// ajv-formats gets wrong by the JSON Schema Test Suite replaced as the console replaces them (web/src/formats.mjs;
// DISAGREEMENTS.md): Ajv is the independent judge of the keywords, the suite of those formats.
const ajv = createAjvInstance(undefined, undefined, {}, undefined, Ajv2020);
for (const [name, check] of Object.entries(SUITE_FORMATS)) ajv.addFormat(name, check);
const answers = cases.map(({ schema, data }) => {
  let validate;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    return data.map(() => ({ error: String(error.message) }));
  }
  return data.map((datum) => {
    try {
      return validate(datum);
    } catch (error) {
      // A $ref cycle that never moves into the data overflows the stack here (the server refuses such a
      // schema when the form is built).
      return { error: String(error.message) };
    }
  });
});
process.stdout.write(JSON.stringify(answers));
