// The console's own error messages for a batch of (schema, data) cases: the console's validator (web/src/
// validator.mjs: @cfworker/json-schema, bundled with the same esbuild plugin as the console) with the console's
// transformErrors (web/src/form_messages.mjs), exactly as web/src/forms.jsx wires them into rjsf. Reads
// {"cases": [{"schema", "data"}]} on stdin, writes one list of {message, name, params} per case (the keyword Ajv
// names each error by, and its params). Run by test_messages_agree.py.
import { importConsoleModules, readCases } from "./console_modules.mjs";

const { validator, transformErrorsFor } = await importConsoleModules(
  'export { validator } from "./validator.mjs";\nexport { transformErrorsFor } from "./form_messages.mjs";\n',
);
const cases = await readCases();

const answers = cases.map(({ schema, data }) => {
  const { errors } = validator.validateFormData(data, schema, undefined, transformErrorsFor(schema));
  return errors.map((error) => ({ message: error.message, name: error.name, params: error.params ?? {} }));
});
process.stdout.write(JSON.stringify(answers));
