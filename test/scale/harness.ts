import http from "node:http";
import { attestdCliAsync } from "../helpers/serverProcess.ts";

/**
 * Workloads for the scale-out tests, over real TCP: one request per connection, Part A's nonce and blob calls,
 * tenants made through the CLI. The processes themselves are test/helpers/serverProcess.ts's.
 */

export interface Res {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  json(): any;
}

/**
 * One HTTP request on its own connection (agent: false), so with --workers consecutive requests reach workers
 * round-robin instead of riding one kept-alive socket to one worker.
 */
export function request(method: string, url: string, headers: Record<string, string> = {}, body?: Buffer | string): Promise<Res> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, json: () => JSON.parse(text) });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.setTimeout(15_000, () => req.destroy(new Error(`${method} ${url}: no answer in 15 s`)));
    req.end(body);
  });
}

export const KEY = "x-vendor-attest-api-key";
export const OCTET = { "content-type": "application/octet-stream" };

/**
 * The smallest valid vendor container (blob-format.md, version 2): exitCode 1, errString "Error", no data,
 * signature or certificates. It appraises to status DeviceError / verdict Unknown and is stored like any verdict,
 * so it exercises nonce consumption and durable storage without a device simulator or trust setup.
 */
export function deviceErrorBlob(): Buffer {
  const err = Buffer.from("Error", "ascii");
  return Buffer.concat([Buffer.from([1, err.length]), err, Buffer.from([2, 0, 0, 0, 0, 0])]);
}

export async function issueNonce(base: string, key: string): Promise<string> {
  const r = await request("POST", `${base}/v2/nonces`, { [KEY]: key });
  if (r.status !== 200) throw new Error(`nonce: ${r.status} ${r.body}`);
  return r.json().nonce as string;
}

export function postBlob(base: string, key: string, nonce: string, blob = deviceErrorBlob()): Promise<Res> {
  return request("POST", `${base}/v2/blobs?nonce=${encodeURIComponent(nonce)}`, { [KEY]: key, ...OCTET }, blob);
}

/** Creates a tenant and `keys` API keys through the CLI, on the store the given flags name. */
export async function tenantWithKeys(storeFlags: string[], name: string, keys: { rps?: number; burst?: number }[]): Promise<string[]> {
  await attestdCliAsync(["tenant", "create", name, ...storeFlags]);
  return Promise.all(
    keys.map(async (k) => {
      const extra = [...(k.rps ? ["--rps", String(k.rps)] : []), ...(k.burst ? ["--burst", String(k.burst)] : [])];
      return (await attestdCliAsync(["key", "create", "--tenant", name, ...extra, ...storeFlags])).trim();
    }),
  );
}
