/**
 * Referer patterns of API-key restrictions, matched as URL parts, never as one string: a pattern and a Referer are
 * both parsed with the WHATWG URL parser (as the browser that sent the Referer did), then scheme, port, host and
 * path are compared each on its own. So `https://*.example.com/*` admits `https://a.example.com/x` but neither
 * `https://evil.com/?https://a.example.com/x` nor `https://a.example.com.evil.com/` nor
 * `https://a.example.com@evil.com/`.
 *
 * A pattern is `SCHEME://HOST[:PORT][PATH]`:
 * - SCHEME: `http`, `https`, or `*` for either.
 * - HOST: a host name (any case, IDN or punycode), an IPv4 or a bracketed IPv6 address; `*` only as whole leftmost
 *   labels, each standing for one or more labels (`*.example.com` is any host under example.com, not example.com
 *   itself).
 * - PORT: when given, the Referer's must be the same; when not, the Referer must use its scheme's default port.
 * - PATH: when given, matched with `*` wildcards against the Referer's path and query (case-sensitive, as URLs
 *   are); when not, any path.
 */

export const MAX_REFERER_PATTERN_LENGTH = 512;
/** longer Referer headers are refused outright rather than matched */
export const MAX_REFERER_LENGTH = 2048;

type Protocol = "http:" | "https:";

export interface RefererPattern {
  /** the schemes allowed, each with the port the Referer must show (URL.port: "" is the scheme's default) */
  origins: readonly { protocol: Protocol; port: string }[];
  /** the host after any wildcard labels, as URL.hostname spells it */
  host: string;
  /** leading `*` labels: the Referer's host needs at least this many labels before `host` */
  wildcardLabels: number;
  /** pathname + search with `*` wildcards; undefined = any path */
  path: string | undefined;
}

const SCHEMES: Record<string, readonly Protocol[]> = { "http://": ["http:"], "https://": ["https:"], "*://": ["http:", "https:"] };
// no spaces, control or format characters (an IDN host is fine), and none of the characters that would make the
// URL parser read parts differently from how a person reads the pattern (userinfo, fragment, backslash as a path
// separator)
const PATTERN_CHARS = /^[^\p{C}\p{Z}]+$/u;
const AMBIGUOUS_CHARS = /[@#\\]/;

/** Parses a pattern; a string is the problem with it (for API_KEY_RESTRICTION_INVALID). */
export function parseRefererPattern(p: string): RefererPattern | string {
  if (p.length === 0 || p.length > MAX_REFERER_PATTERN_LENGTH) return `must be 1-${MAX_REFERER_PATTERN_LENGTH} characters`;
  if (!PATTERN_CHARS.test(p)) return "must contain no spaces or control characters";
  if (AMBIGUOUS_CHARS.test(p)) return "must contain no @, # or \\";
  const scheme = Object.keys(SCHEMES).find((s) => p.toLowerCase().startsWith(s));
  if (!scheme) return "must start with http://, https:// or *://";
  const rest = p.slice(scheme.length);
  const authorityEnd = rest.search(/[/?]/);
  const origins: { protocol: Protocol; port: string }[] = [];
  let parsed: URL | undefined;
  for (const protocol of SCHEMES[scheme]!) {
    try {
      parsed = new URL(`${protocol}//${rest}`);
    } catch {
      return "is not a URL pattern";
    }
    origins.push({ protocol, port: parsed.port });
  }
  const labels = parsed!.hostname.split(".");
  const wildcardLabels = labels.findIndex((l) => l !== "*");
  if (wildcardLabels === -1) return "must name a host besides *";
  const named = labels.slice(wildcardLabels);
  if (named.some((l) => l.includes("*"))) return "may use * in the host only as whole leftmost labels (*.example.com)";
  if (named.some((l) => l === "")) return "has an empty host label";
  return {
    origins,
    host: named.join("."),
    wildcardLabels,
    path: authorityEnd === -1 ? undefined : parsed!.pathname + parsed!.search,
  };
}

/** The Referer as the browser meant it, or undefined when it is not an http(s) URL a browser would send. */
export function parseReferer(header: string): URL | undefined {
  if (header.length > MAX_REFERER_LENGTH) return undefined;
  let url: URL;
  try {
    url = new URL(header);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  // browsers strip credentials from a Referer: one that carries them was written by hand
  if (url.username !== "" || url.password !== "") return undefined;
  return url;
}

function hostMatches(pattern: RefererPattern, hostname: string): boolean {
  if (pattern.wildcardLabels === 0) return hostname === pattern.host;
  if (!hostname.endsWith("." + pattern.host)) return false;
  const extra = hostname.slice(0, -(pattern.host.length + 1)).split(".");
  return extra.length >= pattern.wildcardLabels && extra.every((l) => l !== "");
}

export function refererMatches(pattern: RefererPattern, referer: URL): boolean {
  return (
    pattern.origins.some((o) => o.protocol === referer.protocol && o.port === referer.port) &&
    hostMatches(pattern, referer.hostname) &&
    (pattern.path === undefined || wildcardMatch(pattern.path, referer.pathname + referer.search))
  );
}

/**
 * `*` wildcard match without regular expressions, so no pattern can backtrack catastrophically: the classic greedy
 * scan that remembers only the last star is O(pattern × text) at worst, and both are length-bounded.
 */
export function wildcardMatch(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let mark = 0;
  while (t < text.length) {
    if (p < pattern.length && pattern[p] !== "*" && pattern[p] === text[t]) {
      p++;
      t++;
    } else if (p < pattern.length && pattern[p] === "*") {
      star = p++;
      mark = t;
    } else if (star !== -1) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === "*") p++;
  return p === pattern.length;
}
