// Ajv's `multipleOf` with rjsf's `multipleOfPrecision: 8` (what the server's `is_multiple` mirrors): the
// quotient must be within 1e-8 of a whole number. Where the quotient is beyond the doubles (1e308 / 0.123456789:
// Infinity, which Ajv lets pass), both sides judge exactly instead, in decimal, as the numbers are written
// (String(number) and Python's repr write the same shortest digits): JSON Schema's answer.
export function ajvMultipleOf(instance, divisor) {
  const quotient = instance / divisor;
  if (!Number.isFinite(quotient)) return exactMultipleOf(instance, divisor);
  return !(Math.abs(Math.round(quotient) - quotient) > 1e-8);
}

// A finite number as digits × 10^exponent, both exact (BigInt digits).
function decimal(number) {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(String(number));
  if (!match) return null;
  const [, sign, whole, fraction = "", exponent = "0"] = match;
  return { digits: BigInt(`${sign}${whole}${fraction}`), exponent: Number(exponent) - fraction.length };
}

function exactMultipleOf(instance, divisor) {
  const a = decimal(instance);
  const b = decimal(divisor);
  if (!a || !b || b.digits === 0n) return false;
  // a / b = (a.digits / b.digits) × 10^(a.exponent - b.exponent): whole when the scaled numerator divides.
  const shift = a.exponent - b.exponent;
  const numerator = shift >= 0 ? a.digits * 10n ** BigInt(shift) : a.digits;
  const denominator = shift >= 0 ? b.digits : b.digits * 10n ** BigInt(-shift);
  return numerator % denominator === 0n;
}
