import { BlockList, isIP } from "node:net";
import type { ApiKeyRestrictions } from "../domain/tenants.ts";
import { parseReferer, parseRefererPattern, refererMatches, type RefererPattern } from "./refererPattern.ts";

/**
 * IP-address and HTTP-referer restrictions of an API key (Part A keys and Part B clients alike).
 *
 * - `ipAddresses`: IPv4/IPv6 addresses or CIDR blocks; when non-empty the caller's address must fall in one.
 *   An IPv4-mapped IPv6 caller (`::ffff:203.0.113.5`, a dual-stack socket) is matched as the IPv4 address.
 * - `referers`: URL patterns (`https://*.example.com/*`) matched part by part against the parsed Referer
 *   (`refererPattern.ts`); when non-empty a Referer is required and must match one.
 * Both lists non-empty: both must admit the caller. A Referer is client-supplied, so it restricts honest
 * browsers' use of a leaked key; the IP list is the control that holds against a determined caller.
 */

export const MAX_RESTRICTION_ENTRIES = 100;
export const MAX_IP_ENTRY_LENGTH = 64;

export interface RestrictionInput {
  ipAddresses?: readonly string[] | undefined;
  referers?: readonly string[] | undefined;
}

export type ParsedRestrictions = { ok: true; restrictions: ApiKeyRestrictions } | { ok: false; reason: string };

export interface Caller {
  ip: string;
  referer: string | undefined;
}

interface Cidr {
  address: string;
  prefix: number;
  family: "ipv4" | "ipv6";
}

function parseCidr(entry: string): Cidr | undefined {
  const parts = entry.split("/");
  if (parts.length > 2 || entry.includes("%")) return undefined;
  const address = parts[0]!.toLowerCase();
  const version = isIP(address);
  if (version === 0) return undefined;
  const max = version === 4 ? 32 : 128;
  let prefix = max;
  if (parts.length === 2) {
    if (!/^\d{1,3}$/.test(parts[1]!)) return undefined;
    prefix = Number(parts[1]);
    if (prefix > max) return undefined;
  }
  return { address, prefix, family: version === 4 ? "ipv4" : "ipv6" };
}

/** Validates a restriction request; the result is what gets stored (entries trimmed of nothing, duplicates dropped). */
export function parseRestrictions(input: RestrictionInput): ParsedRestrictions {
  const ips = input.ipAddresses;
  const refs = input.referers;
  if ((ips === undefined || ips.length === 0) && (refs === undefined || refs.length === 0)) {
    return { ok: false, reason: "Give at least one IP address/CIDR or referer pattern" };
  }
  if (ips !== undefined && ips.length === 0) return { ok: false, reason: "ipAddresses is empty" };
  if (refs !== undefined && refs.length === 0) return { ok: false, reason: "referers is empty" };
  if ((ips?.length ?? 0) > MAX_RESTRICTION_ENTRIES || (refs?.length ?? 0) > MAX_RESTRICTION_ENTRIES) {
    return { ok: false, reason: `At most ${MAX_RESTRICTION_ENTRIES} entries per list` };
  }
  const ipAddresses: string[] = [];
  for (const [i, entry] of (ips ?? []).entries()) {
    const c = entry.length <= MAX_IP_ENTRY_LENGTH ? parseCidr(entry) : undefined;
    if (!c) return { ok: false, reason: `ipAddresses[${i}] is not an IPv4/IPv6 address or CIDR block` };
    const canonical = `${c.address}/${c.prefix}`;
    if (!ipAddresses.includes(canonical)) ipAddresses.push(canonical);
  }
  const referers: string[] = [];
  for (const [i, p] of (refs ?? []).entries()) {
    const parsed = parseRefererPattern(p);
    if (typeof parsed === "string") return { ok: false, reason: `referers[${i}] ${parsed}` };
    if (!referers.includes(p)) referers.push(p);
  }
  return { ok: true, restrictions: { ipAddresses, referers } };
}

interface Compiled {
  ips: BlockList | undefined;
  referers: RefererPattern[] | undefined;
}

const compiledCache = new Map<string, Compiled>();

function compile(r: ApiKeyRestrictions): Compiled {
  const cacheKey = JSON.stringify(r);
  const hit = compiledCache.get(cacheKey);
  if (hit) return hit;
  let ips: BlockList | undefined;
  if (r.ipAddresses.length > 0) {
    ips = new BlockList();
    for (const entry of r.ipAddresses) {
      const c = parseCidr(entry);
      // stored entries were validated on the way in; one that no longer parses admits nobody
      if (c) ips.addSubnet(c.address, c.prefix, c.family);
    }
  }
  // a stored pattern that no longer parses (one saved before patterns were URL-checked) admits nobody
  const referers = r.referers.length > 0 ? r.referers.map(parseRefererPattern).filter((p): p is RefererPattern => typeof p !== "string") : undefined;
  const compiled = { ips, referers };
  if (compiledCache.size >= 1000) compiledCache.clear();
  compiledCache.set(cacheKey, compiled);
  return compiled;
}

function ipAllowed(list: BlockList, ip: string): boolean {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  const address = mapped ? mapped[1]! : ip;
  const version = isIP(address);
  if (version === 0) return false;
  return list.check(address, version === 4 ? "ipv4" : "ipv6");
}

/** Undefined when the restrictions admit the caller, else the reason for the refusal. */
export function restrictionRefusal(r: ApiKeyRestrictions | null, caller: Caller): string | undefined {
  if (!r) return undefined;
  const c = compile(r);
  if (c.ips && !ipAllowed(c.ips, caller.ip)) return `Requests from ${caller.ip} are not allowed for this key`;
  if (c.referers) {
    if (!caller.referer) return "This key requires a Referer header";
    const referer = parseReferer(caller.referer);
    if (!referer || !c.referers.some((p) => refererMatches(p, referer))) return "The Referer is not allowed for this key";
  }
  return undefined;
}

/** The RestrictionCheck for Part A's ApiKeyAuthenticator (and anything else holding `restrictions`). */
export function restrictionCheck(key: { restrictions: ApiKeyRestrictions | null }, caller: Caller): string | undefined {
  return restrictionRefusal(key.restrictions, caller);
}

/**
 * A test for "is this address in the list" over addresses and CIDR blocks (entries that do not parse match
 * nothing), with IPv4-mapped IPv6 addresses matched as IPv4, as for key restrictions.
 */
export function addressListMatcher(entries: readonly string[]): (ip: string) => boolean {
  const list = new BlockList();
  let any = false;
  for (const entry of entries) {
    const c = parseCidr(entry);
    if (!c) continue;
    list.addSubnet(c.address, c.prefix, c.family);
    any = true;
  }
  return any ? (ip) => ipAllowed(list, ip) : () => false;
}
