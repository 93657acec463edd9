// Ajv's `multipleOf` with rjsf's `multipleOfPrecision: 8` (what the server's `_js_multiple` mirrors): the
// quotient must be within 1e-8 of a whole number; a quotient that is not finite passes, as it does in Ajv.
export function ajvMultipleOf(instance, divisor) {
  const quotient = instance / divisor;
  return !(Math.abs(Math.round(quotient) - quotient) > 1e-8);
}
