// Validates a batch of (schema, data) cases with the console's browser validator (web/src/validator.mjs:
// @cfworker/json-schema with ajv-formats' formats, no code generation), bundled with the same esbuild plugin as
// the console's vendor file. Same input and output as ajv_check.mjs: {"cases": [{"schema", "data": [...]}]} on
// stdin; per case one answer per datum: true, false, or {"error"}. Run by tests/differential/test_browser_validator.py.
import { importConsoleModules, readCases } from "./console_modules.mjs";

const { isValidData } = await importConsoleModules('export { isValidData } from "./validator.mjs";\n');
const cases = await readCases();

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
