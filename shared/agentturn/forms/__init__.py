"""Forms: definitions, the one validation pass, schema rules, ECMA-262 patterns, formats and wording."""
