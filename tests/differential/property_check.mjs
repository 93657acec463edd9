// Node's own RegExp on \p{...} patterns: for each {pattern} (read as `new RegExp(pattern, "u")`), either
// {"error"} when JavaScript refuses it, or {"matches"}: one "1"/"0" per code point of the sample, whether the
// pattern matches that code point alone. Reads {"patterns": [...], "sample": [code points]} on stdin.
// Run by tests/differential/test_unicode_properties.py.
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { patterns, sample } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const texts = sample.map((code) => String.fromCodePoint(code));
const answers = patterns.map((pattern) => {
  let compiled;
  try {
    compiled = new RegExp(`^(?:${pattern})$`, "u");
  } catch (error) {
    return { error: String(error.message) };
  }
  return { matches: texts.map((text) => (compiled.test(text) ? "1" : "0")).join("") };
});
process.stdout.write(JSON.stringify(answers));
