/**
 * The characters no identifier, label or name a person gives may hold (emails of portal users and of Part B's
 * users, API key labels, tenant and reseller names and ids, profile names, passkey names, ...): the control
 * characters (Unicode Cc: C0, DEL and C1 such as U+0085 NEXT LINE) and the bidirectional formatting characters
 * (U+061C ARABIC LETTER MARK, U+200E/U+200F LRM/RLM, U+202A–U+202E embeddings and overrides such as U+202E RLO,
 * U+2066–U+2069 isolates). A control character can cut a name short or break a line in a list or a log; a bidi
 * override makes `admin‮moc.elpmaxe@` read as another name in every list that shows it.
 *
 * One rule, two forms: `SAFE_TEXT_PATTERN` is the JSON Schema `pattern` every such field of the HTTP schemas uses
 * (`SafeText` in src/http/schemas/common.ts), and `unsafeCharIn` is what the services shared with the CLI check.
 */

/** The class's members, for a pattern that refuses more (a Part A requestedId also refuses what XML cannot carry). */
export const UNSAFE_TEXT_CHARS = "\\p{Cc}\\u061C\\u200E\\u200F\\u202A-\\u202E\\u2066-\\u2069";

/** ECMA-262 with the `u` flag, as JSON Schema 2020-12 and Ajv read a `pattern`. */
export const SAFE_TEXT_PATTERN = `^[^${UNSAFE_TEXT_CHARS}]*$`;

const UNSAFE = new RegExp(`[${UNSAFE_TEXT_CHARS}]`, "u");

/** The first control or bidi formatting character of `text` as `U+XXXX`, or undefined when it has none. */
export function unsafeCharIn(text: string): string | undefined {
  const found = UNSAFE.exec(text)?.[0];
  return found === undefined ? undefined : `U+${found.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
}

/** The reason a refusal gives, naming the field and the character found. */
export function unsafeTextReason(field: string, char: string): string {
  return `${field} must not contain control or bidirectional formatting characters (found ${char})`;
}
