/**
 * The bare baseline the HTTP benchmark compares attestd with: a minimal `node:https` server, same TLS material,
 * same paths, run as its own child process like attestd. It does only what any blob verifier must do:
 *
 *   POST /v2/nonces  → 32 random bytes, base64url, as {"nonce": ...}
 *   POST /v2/blobs   → read the body, slice the vendor container (fixed offsets, no validation), then the same two
 *                      signature checks attestd makes: crypto.verify of the data with the leaf key, and
 *                      crypto.verify of the leaf's TBSCertificate with the intermediate's key.
 *                      A body starting 0x30 is an android-key DER chain: bench/lib/androidFloor.ts's unavoidable work
 *                      (split, the leaf's signature with its issuer's key kept by DER bytes, the KeyDescription's
 *                      challenge against the nonce, the issuers' serials in --android-status's list).
 *                      A body starting "eyJ" (base64url of '{"', a compact JWE's header) is a Play Integrity token:
 *                      bench/lib/playIntegrityFloor.ts's unavoidable work with jose, as attestd does it (decrypt
 *                      A256KW + A256GCM, verify ES256, the nonce), answered with a record of the same eleven fields
 *                      as attestd's, so the two write answers of about the same size.
 *                      A body starting 0xa3 (a CBOR map of three) is an App Attest attestation object:
 *                      bench/lib/appAttestFloor.ts's unavoidable work (CBOR, the chain to --app-attest-root, the
 *                      nonce, the key id), answered with a record of the same eleven fields. A JSON body with
 *                      "assertion" is an App Attest assertion: appAttestAssertionFloor's work with the keys of
 *                      --app-attest-keys (a JSON file {keyId: public key, uncompressed point, base64}).
 *
 * The leaf is parsed on every request (it is per device); the intermediate's key is kept by its DER bytes, as
 * attestd keeps validated issuers, so the baseline pays for nothing attestd does not.
 * No auth, no nonce store, no chain policy, no verdict storage: the ceiling for a Node process on this machine.
 * Usage: node dist/bench/baseline/server.js --cert FULLCHAIN.pem --key KEY.pem [--android-status FILE]
 *          [--play-decryption-key B64 --play-verification-key B64] [--app-attest-root PEM]
 * (prints {"port": N})
 */
import { createServer, type ServerOptions } from "node:https";
import { randomBytes, verify, X509Certificate, type KeyObject } from "node:crypto";
import { createPublicKey } from "node:crypto";
import { appAttestAssertionFloor, appAttestAttestationFloor } from "../lib/appAttestFloor.ts";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { androidFloor } from "../lib/androidFloor.ts";
import { playFloorKeys, playIntegrityFloor, type PlayFloorKeys } from "../lib/playIntegrityFloor.ts";

const { values } = parseArgs({
  options: {
    cert: { type: "string" },
    key: { type: "string" },
    port: { type: "string", default: "0" },
    "android-status": { type: "string" },
    "play-decryption-key": { type: "string" },
    "play-verification-key": { type: "string" },
    "app-attest-root": { type: "string" },
    "app-attest-keys": { type: "string" },
  },
});
if (!values.cert || !values.key) throw new Error("usage: server.ts --cert FILE --key FILE [--port N]");

/** DER: the header length and content length of the TLV at `off`. */
function tlv(buf: Buffer, off: number): { header: number; length: number } {
  const first = buf[off + 1]!;
  if (first < 0x80) return { header: 2, length: first };
  const n = first & 0x7f;
  let length = 0;
  for (let i = 0; i < n; i++) length = length * 256 + buf[off + 2 + i]!;
  return { header: 2 + n, length };
}

/** Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue BIT STRING } */
function splitCertificate(der: Buffer): { tbs: Buffer; signature: Buffer } {
  const outer = tlv(der, 0);
  let off = outer.header;
  const t = tlv(der, off);
  const tbs = der.subarray(off, off + t.header + t.length);
  off += t.header + t.length;
  const alg = tlv(der, off);
  off += alg.header + alg.length;
  const bits = tlv(der, off);
  return { tbs, signature: der.subarray(off + bits.header + 1, off + bits.header + bits.length) };
}

const issuerKeys = new Map<string, KeyObject>();
function issuerKey(der: Buffer): KeyObject {
  const id = der.toString("latin1");
  let key = issuerKeys.get(id);
  if (!key) issuerKeys.set(id, (key = new X509Certificate(der).publicKey));
  return key;
}

function appraise(blob: Buffer): boolean {
  let off = 1; // exitCode
  off += 1 + blob[off]!; // errLen + errString
  off += 1; // version
  const dataLen = blob.readUInt16BE(off);
  const data = blob.subarray(off + 2, off + 2 + dataLen);
  off += 2 + dataLen;
  const sigLen = blob.readUInt16BE(off);
  const sig = blob.subarray(off + 2, off + 2 + sigLen);
  off += 2 + sigLen;
  const count = blob[off++]!;
  const certs: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const len = blob.readUInt16BE(off);
    certs.push(blob.subarray(off + 2, off + 2 + len));
    off += 2 + len;
  }
  const leafKey = new X509Certificate(certs[0]!).publicKey;
  const interKey = issuerKey(certs[1]!);
  const { tbs, signature } = splitCertificate(certs[0]!);
  return verify("sha256", data, leafKey, sig) && verify("sha256", tbs, interKey, signature);
}

/** Google's status-list shape; serials as lowercase hex without leading zeros, as the floor looks them up. */
const androidStatus = new Map<string, unknown>(
  values["android-status"]
    ? Object.keys((JSON.parse(readFileSync(values["android-status"], "utf8")) as { entries: object }).entries)
      .map((k) => [k.toLowerCase().replace(/^0+/, ""), true])
    : [],
);

function appraiseAndroid(blob: Buffer, url: string): boolean {
  const nonce = new URL(url, "https://x").searchParams.get("nonce") ?? "";
  return androidFloor(blob, Buffer.from(nonce, "base64url"), androidStatus);
}

const playKeys: PlayFloorKeys | undefined =
  values["play-decryption-key"] && values["play-verification-key"]
    ? playFloorKeys(values["play-decryption-key"], values["play-verification-key"])
    : undefined;

/** A compact JWE's first part is base64url JSON: it starts with "eyJ" ('{"'); no vendor or DER blob does. */
const isPlayToken = (body: Buffer) => body[0] === 0x65 && body[1] === 0x79 && body[2] === 0x4a;

/**
 * The floor's work on a Play Integrity token, answered as attestd answers a Yes: the eleven fields of the record,
 * filled from the payload (the digests as hex, the version code), so both servers write a body of about the same size.
 */
async function answerPlay(body: Buffer, url: string): Promise<{ ok: boolean; body: string }> {
  const nonce = new URL(url, "https://x").searchParams.get("nonce") ?? "";
  const p = playKeys ? await playIntegrityFloor(body.toString("latin1"), nonce, playKeys) : undefined;
  if (!p) return { ok: false, body: JSON.stringify({ status: "SignatureInvalid" }) };
  const now = new Date().toISOString();
  const measurements = (p.appIntegrity?.certificateSha256Digest ?? []).map((d) => Buffer.from(d, "base64url").toString("hex")).join("");
  const record = { measurements, tamperBit: "", IMEI: "", status: "Success", nonce, chipId: "", verdict: "Yes", MAC: "", version: p.appIntegrity?.versionCode ?? "", createdDate: now, updateDate: now };
  return { ok: true, body: JSON.stringify(record) };
}

const appAttestRoot: KeyObject | undefined = values["app-attest-root"] ? new X509Certificate(readFileSync(values["app-attest-root"])).publicKey : undefined;

/** the remembered App Attest keys, imported once (attestd reads its key per assertion from the store) */
const appAttestKeys = new Map<string, KeyObject>(
  values["app-attest-keys"]
    ? Object.entries(JSON.parse(readFileSync(values["app-attest-keys"], "utf8")) as Record<string, string>).map(([id, point]) => {
        const p = Buffer.from(point, "base64");
        return [id, createPublicKey({ key: { kty: "EC", crv: "P-256", x: p.subarray(1, 33).toString("base64url"), y: p.subarray(33).toString("base64url") }, format: "jwk" })];
      })
    : [],
);
const appAttestCounters = new Map<string, number>();

/** The floor's work on an App Attest assertion, answered as attestd answers (Yes, or No for a used counter). */
function answerAssertion(body: Buffer, url: string): { ok: boolean; body: string } {
  const nonce = new URL(url, "https://x").searchParams.get("nonce") ?? "";
  const a = appAttestAssertionFloor(body, nonce, appAttestKeys, appAttestCounters);
  if (!a) return { ok: false, body: JSON.stringify({ status: "SignatureInvalid" }) };
  const now = new Date().toISOString();
  const record = { measurements: "", tamperBit: "", IMEI: "", status: a.fresh ? "Success" : "NonceMismatch", nonce, chipId: a.keyId, verdict: a.fresh ? "Yes" : "No", MAC: "", version: String(a.counter), createdDate: now, updateDate: now };
  return { ok: true, body: JSON.stringify(record) };
}

/** The floor's work on an App Attest attestation object, answered as attestd answers a Yes (eleven fields). */
function answerAppAttest(body: Buffer, url: string): { ok: boolean; body: string } {
  const nonce = new URL(url, "https://x").searchParams.get("nonce") ?? "";
  const keyId = appAttestRoot ? appAttestAttestationFloor(body, nonce, appAttestRoot) : undefined;
  if (!keyId) return { ok: false, body: JSON.stringify({ status: "CertificateInvalid" }) };
  const now = new Date().toISOString();
  const record = { measurements: "", tamperBit: "", IMEI: "", status: "Success", nonce, chipId: keyId, verdict: "Yes", MAC: "", version: "0", createdDate: now, updateDate: now };
  return { ok: true, body: JSON.stringify(record) };
}

const tls: ServerOptions = { cert: readFileSync(values.cert, "utf8"), key: readFileSync(values.key, "utf8") };
const server = createServer(tls, (req, res) => {
  if (req.method === "POST" && req.url === "/v2/nonces") {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json; charset=utf-8" });
      res.end(JSON.stringify({ nonce: randomBytes(32).toString("base64url") }));
    });
    return;
  }
  if (req.method === "POST" && req.url?.startsWith("/v2/blobs")) {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (isPlayToken(body)) {
        void answerPlay(body, req.url!).then((a) => {
          res.writeHead(a.ok ? 200 : 400, { "content-type": "application/json; charset=utf-8" });
          res.end(a.body);
        });
        return;
      }
      if (body[0] === 0xa3 || (body[0] === 0x7b && body.includes('"assertion"'))) {
        const a = body[0] === 0xa3 ? answerAppAttest(body, req.url!) : answerAssertion(body, req.url!);
        res.writeHead(a.ok ? 200 : 400, { "content-type": "application/json; charset=utf-8" });
        res.end(a.body);
        return;
      }
      let ok = false;
      try {
        ok = body[0] === 0x30 ? appraiseAndroid(body, req.url!) : appraise(body);
      } catch {
        ok = false;
      }
      res.writeHead(ok ? 200 : 400, { "content-type": "application/json; charset=utf-8" });
      res.end(JSON.stringify({ status: ok ? "Success" : "SignatureInvalid" }));
    });
    return;
  }
  if (req.method === "GET" && req.url === "/healthz") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"status":"ok"}');
    return;
  }
  res.writeHead(404).end();
});
server.keepAliveTimeout = 30_000;
server.listen(Number(values.port), "127.0.0.1", () => {
  const addr = server.address();
  process.stdout.write(JSON.stringify({ port: typeof addr === "object" && addr ? addr.port : 0 }) + "\n");
});
const stop = () => server.close(() => process.exit(0));
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
