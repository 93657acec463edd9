// The console's own error messages for a batch of (schema, data) cases: rjsf's validator on Ajv 2020 with the
// console's transformErrors (web/src/form_messages.mjs), exactly as web/src/forms.jsx wires them. Reads
// {"cases": [{"schema", "data"}]} on stdin, writes one list of messages per case. Run by test_messages_agree.py.
import Ajv2020 from "ajv/dist/2020.js";
import { customizeValidator } from "@rjsf/validator-ajv8";
import { transformErrorsFor } from "../../shared/agentturn/web/src/form_messages.mjs";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { cases } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const validator = customizeValidator({ AjvClass: Ajv2020 });
const answers = cases.map(({ schema, data }) => {
  const { errors } = validator.validateFormData(data, schema, undefined, transformErrorsFor(schema));
  return errors.map((error) => error.message);
});
process.stdout.write(JSON.stringify(answers));
