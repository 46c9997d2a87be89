/**
 * JSON text of an operator-supplied trust file (roots, status list, reference values, allow-lists, policy), with
 * the error every such parser reports: `<source>: not JSON (<parser message>)`, one line naming the file.
 */
export function parseJsonDocument(text: string, source: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${source}: not JSON (${(e as Error).message})`);
  }
}
