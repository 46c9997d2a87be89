/**
 * --otlp-headers: what the OTLP exporter sends with every export (a collector's API key, a tenant header). Its own
 * module, free of imports, because config.ts validates it and every CLI command loads config.ts.
 */

/** --otlp-headers, `name=value` pairs separated by commas (the OTEL_EXPORTER_OTLP_HEADERS form), values URL-decoded */
export function parseOtlpHeaders(value: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (!value) return headers;
  for (const pair of value.split(",")) {
    if (pair.trim() === "") continue;
    const eq = pair.indexOf("=");
    const name = pair.slice(0, eq).trim().toLowerCase();
    headers[name] = decodeURIComponent(pair.slice(eq + 1).trim());
  }
  return headers;
}

/** why --otlp-headers is unusable, or undefined; never repeats a value (it may be a credential) */
export function otlpHeadersProblem(value: string): string | undefined {
  const pairs = value.split(",").filter((p) => p.trim() !== "");
  if (pairs.length === 0 || pairs.length > 16 || value.length > 8192) return "must hold 1 to 16 name=value pairs, 8 KiB in all";
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    if (eq <= 0) return "must be name=value pairs separated by commas";
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(pair.slice(0, eq).trim())) return "has a header name that is not an HTTP token";
    let decoded: string;
    try {
      decoded = decodeURIComponent(pair.slice(eq + 1).trim());
    } catch {
      return "has a value that is not valid percent-encoding";
    }
    if (/[\r\n\0]/.test(decoded)) return "has a value with a line break or NUL";
  }
  return undefined;
}
