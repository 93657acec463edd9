// Node's own RegExp on \p{...} patterns: for each {pattern} (read as `new RegExp(pattern, "u")`, and checked in
// "v" mode too), either {"error", "vMode"} when JavaScript refuses it, or {"matches"}: one "1"/"0" per code point
// of the sample, whether the pattern matches that code point alone. Reads {"patterns": [...], "sample": [code points]} on stdin.
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
    // Refused in u mode; say whether the v mode (which adds properties of strings) refuses it too.
    let vMode = "refused";
    try {
      new RegExp(`^(?:${pattern})$`, "v");
      vMode = "accepted";
    } catch {}
    return { error: String(error.message), vMode };
  }
  // A name u mode accepts means the same in v mode: both compile it.
  new RegExp(`^(?:${pattern})$`, "v");
  return { matches: texts.map((text) => (compiled.test(text) ? "1" : "0")).join("") };
});
process.stdout.write(JSON.stringify(answers));
