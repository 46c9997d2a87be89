/**
 * CSV (RFC 4180) for exports people open in a spreadsheet. A cell a spreadsheet would run as a formula (one that
 * starts with = + - @, or a tab or carriage return that some strip first) is neutralised with a leading
 * apostrophe, as OWASP's "CSV injection" advice says: a verdict's reason quotes what a device sent, so a hostile
 * device could otherwise put a formula in an operator's spreadsheet.
 */
export function csvCell(value: string | number | null | undefined): string {
  let s = value === null || value === undefined ? "" : String(value);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

export function csvLine(cells: readonly (string | number | null | undefined)[]): string {
  return cells.map(csvCell).join(",") + "\r\n";
}
