import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import http from "node:http";
import https from "node:https";
import { BlockList, isIP } from "node:net";

/**
 * Where a webhook may be sent (issue 26, docs/events.md "SSRF"): a tenant names the URL, so without a guard attestd
 * would POST wherever a tenant points it: its own loopback admin port, the cloud's metadata service, the private
 * network behind it. A URL is checked when it is registered (its literal address, its scheme) and again at every
 * delivery after DNS resolution, and the connection is made to the address that was checked (pinned), so a name
 * that resolves to a public address at the check and to 127.0.0.1 a moment later (DNS rebinding) gains nothing.
 */

export interface WebhookTargetPolicy {
  /** any address, private ranges included (an operator's own network, tests) */
  allowPrivate: boolean;
  /** host names (exact, any case) or CIDRs allowed although their addresses are private */
  allowHosts: readonly string[];
  /** plain http:// besides https:// */
  allowHttp: boolean;
}

export class WebhookTargetRefused extends Error {
  override name = "WebhookTargetRefused";
}

/** Addresses no tenant's webhook may reach unless the operator allows them. */
const REFUSED = (() => {
  const b = new BlockList();
  const v4: [string, number][] = [
    ["0.0.0.0", 8], // "this" network
    ["10.0.0.0", 8], // private
    ["100.64.0.0", 10], // carrier-grade NAT
    ["127.0.0.0", 8], // loopback
    ["169.254.0.0", 16], // link-local, cloud metadata (169.254.169.254)
    ["172.16.0.0", 12], // private
    ["192.0.0.0", 24], // IETF protocol assignments
    ["192.0.2.0", 24], // documentation
    ["192.168.0.0", 16], // private
    ["198.18.0.0", 15], // benchmarking
    ["198.51.100.0", 24], // documentation
    ["203.0.113.0", 24], // documentation
    ["224.0.0.0", 4], // multicast
    ["240.0.0.0", 4], // reserved, broadcast
  ];
  for (const [a, p] of v4) b.addSubnet(a, p, "ipv4");
  const v6: [string, number][] = [
    ["::", 128], // unspecified
    ["::1", 128], // loopback
    ["64:ff9b::", 96], // NAT64: reaches IPv4 addresses, private ones too
    ["100::", 64], // discard
    ["2001:db8::", 32], // documentation
    ["fc00::", 7], // unique-local (AWS metadata fd00:ec2::254 is in it)
    ["fe80::", 10], // link-local
    ["ff00::", 8], // multicast
  ];
  for (const [a, p] of v6) b.addSubnet(a, p, "ipv6");
  return b;
})();

/** The IPv4 address inside an IPv4-mapped IPv6 one (::ffff:a.b.c.d, or its hex form), else undefined. */
function mappedV4(address: string): string | undefined {
  const m = /^::ffff:(?:0:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (m) return m[1];
  const h = /^::ffff:(?:0:)?([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!h) return undefined;
  const hi = parseInt(h[1]!, 16);
  const lo = parseInt(h[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether `address` (an IP literal) is in a refused range: loopback, private, link-local, unique-local, multicast, metadata. */
export function isRefusedAddress(address: string): boolean {
  const v4 = mappedV4(address);
  if (v4) return REFUSED.check(v4, "ipv4");
  const family = isIP(address);
  if (family === 0) return true;
  return REFUSED.check(address, family === 4 ? "ipv4" : "ipv6");
}

function allowList(policy: WebhookTargetPolicy): { hosts: Set<string>; nets: BlockList } {
  const hosts = new Set<string>();
  const nets = new BlockList();
  for (const entry of policy.allowHosts) {
    const [addr, bits] = entry.split("/");
    const family = isIP(addr ?? "");
    if (family !== 0) {
      const type = family === 4 ? "ipv4" : "ipv6";
      if (bits === undefined) nets.addAddress(addr!, type);
      else nets.addSubnet(addr!, Number(bits), type);
    } else hosts.add(entry.toLowerCase());
  }
  return { hosts, nets };
}

/** A CIDR or host list entry the allow-list can hold; a message naming the fault, else undefined (config checks). */
export function allowHostProblem(entry: string): string | undefined {
  const [addr, bits, extra] = entry.split("/");
  if (extra !== undefined) return `${entry} is neither a host name nor a CIDR`;
  const family = isIP(addr ?? "");
  if (family === 0) return bits === undefined && /^[a-z0-9.-]+$/i.test(entry) ? undefined : `${entry} is neither a host name nor a CIDR`;
  if (bits === undefined) return undefined;
  const n = Number(bits);
  return Number.isInteger(n) && n >= 0 && n <= (family === 4 ? 32 : 128) ? undefined : `${entry} has a bad prefix length`;
}

const hostOf = (u: URL) => u.hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();

function addressAllowed(policy: WebhookTargetPolicy, host: string, address: string): boolean {
  if (policy.allowPrivate) return true;
  const allowed = allowList(policy);
  if (allowed.hosts.has(host)) return true;
  const v4 = mappedV4(address) ?? address;
  const family = isIP(v4);
  if (family !== 0 && allowed.nets.check(v4, family === 4 ? "ipv4" : "ipv6")) return true;
  return !isRefusedAddress(address);
}

/**
 * The URL as a target, checked without resolving it (registration): http(s) only (https unless the operator allows
 * http), no credentials in it, and a literal address outside the refused ranges. Throws WebhookTargetRefused.
 */
export function checkWebhookUrl(raw: string, policy: WebhookTargetPolicy): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new WebhookTargetRefused("the URL is not an absolute URL");
  }
  if (u.protocol !== "https:" && !(u.protocol === "http:" && policy.allowHttp)) {
    throw new WebhookTargetRefused(policy.allowHttp ? "the URL must be http or https" : "the URL must be https (the operator allows no plain http)");
  }
  if (u.username || u.password) throw new WebhookTargetRefused("the URL must not hold a user name or password");
  if (u.hash) throw new WebhookTargetRefused("the URL must not have a fragment");
  const host = hostOf(u);
  if (host === "" ) throw new WebhookTargetRefused("the URL has no host");
  if (isIP(host) !== 0 && !addressAllowed(policy, host, host)) {
    throw new WebhookTargetRefused(`the URL's address ${host} is loopback, private, link-local or otherwise not public, and the operator allows no such target`);
  }
  if (isIP(host) === 0 && (host === "localhost" || host.endsWith(".localhost")) && !addressAllowed(policy, host, "127.0.0.1")) {
    throw new WebhookTargetRefused("the URL names localhost, and the operator allows no loopback target");
  }
  return u;
}

export type Lookup = (host: string) => Promise<LookupAddress[]>;

export const systemLookup: Lookup = (host) =>
  new Promise((resolve, reject) => dnsLookup(host, { all: true, verbatim: true }, (err, addrs) => (err ? reject(err) : resolve(addrs))));

/** The URL checked and resolved now: every address its name resolves to must be allowed; the first is the one to use. */
export async function resolveWebhookTarget(raw: string, policy: WebhookTargetPolicy, lookup: Lookup = systemLookup): Promise<{ url: URL; address: LookupAddress }> {
  const url = checkWebhookUrl(raw, policy);
  const host = hostOf(url);
  const addrs = isIP(host) !== 0 ? [{ address: host, family: isIP(host) }] : await lookup(host);
  if (addrs.length === 0) throw new WebhookTargetRefused(`${host} resolves to no address`);
  for (const a of addrs) {
    if (!addressAllowed(policy, host, a.address)) {
      throw new WebhookTargetRefused(`${host} resolves to ${a.address}, which is loopback, private, link-local or otherwise not public, and the operator allows no such target`);
    }
  }
  return { url, address: addrs[0]! };
}

export interface WebhookPostResult {
  status: number;
  /** the answer's Retry-After, as given */
  retryAfter: string | null;
  /** the first `maxExcerptBytes` of the body */
  excerpt: Buffer;
}

/**
 * POSTs `body` to the resolved target, connecting to `address` (pinned: no second resolution), within `timeoutMs`
 * for the answer and the excerpt together, following no redirect (a 3xx is an answer like any other: not 2xx), and
 * reading at most `maxExcerptBytes` of the answer. Rejects on a network failure or the timeout (an Error named
 * TimeoutError).
 */
export function postWebhook(
  target: { url: URL; address: LookupAddress },
  headers: Record<string, string>,
  body: string,
  opts: { timeoutMs: number; maxExcerptBytes: number; signal?: AbortSignal },
): Promise<WebhookPostResult> {
  const { url, address } = target;
  const mod = url.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | undefined, r?: WebhookPostResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", aborted);
      req.destroy();
      if (err) reject(err);
      else resolve(r!);
    };
    const req = mod.request(
      url,
      {
        method: "POST",
        agent: false,
        headers: { ...headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) },
        // the address checked above, whatever the name resolves to now
        lookup: (_host: string, o: { all?: boolean }, cb: (...a: unknown[]) => void) => {
          if (o?.all) cb(null, [address]);
          else cb(null, address.address, address.family);
        },
      } as http.RequestOptions,
      (res) => {
        const chunks: Buffer[] = [];
        let total = 0;
        const retryAfter = res.headers["retry-after"];
        const done = () =>
          finish(undefined, { status: res.statusCode ?? 0, retryAfter: typeof retryAfter === "string" ? retryAfter : null, excerpt: Buffer.concat(chunks).subarray(0, opts.maxExcerptBytes) });
        res.on("data", (c: Buffer) => {
          chunks.push(c);
          total += c.length;
          if (total >= opts.maxExcerptBytes) done();
        });
        res.on("end", done);
        res.on("error", (e) => finish(e));
      },
    );
    const timer = setTimeout(() => {
      const e = new Error(`no answer within ${opts.timeoutMs} ms`);
      e.name = "TimeoutError";
      finish(e);
    }, opts.timeoutMs);
    const aborted = () => finish(new Error("shutting down"));
    opts.signal?.addEventListener("abort", aborted, { once: true });
    req.on("error", (e) => finish(e));
    req.end(body);
  });
}
