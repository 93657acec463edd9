// The one change the console makes to a bundled package, as an esbuild plugin (used by build.mjs and by the
// differential test, so both run the same code): @cfworker/json-schema checks `multipleOf` exactly in decimal,
// the server (agentturn/forms/validation.py `is_multiple`) as Ajv does under rjsf's `multipleOfPrecision: 8`,
// where 0.07 is a multiple of 0.01. The console must refuse exactly what the server refuses.
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

const MULTIPLE_OF = fileURLToPath(new URL("./multiple_of.mjs", import.meta.url));
const ORIGINAL = "function isMultipleOf(instance, divisor) {";

export const cfworkerMultipleOf = {
  name: "agentturn-cfworker-multiple-of",
  setup(build) {
    build.onLoad({ filter: /@cfworker[\\/]json-schema[\\/]dist[\\/]esm[\\/]validate\.js$/ }, async (args) => {
      const source = await readFile(args.path, "utf8");
      if (!source.includes(ORIGINAL)) {
        // A new version of the package: fail the build rather than silently disagree with the server.
        throw new Error(`${args.path} no longer defines isMultipleOf as expected; revisit web/src/patches.mjs`);
      }
      const contents =
        `import { ajvMultipleOf as isMultipleOf } from ${JSON.stringify(MULTIPLE_OF)};\n` +
        source.replace(ORIGINAL, "function exactIsMultipleOf(instance, divisor) {");
      return { contents, loader: "js" };
    });
  },
};
