/**
 * The App Attest attestation *floor*: the work no verifier of an App Attest attestation can skip, for the bare
 * baseline server (baseline/server.ts), so the bench can say how far attestd's POST /v2/blobs is from it (issue 25):
 *
 *   1. decode the CBOR attestation object (cbor2, as attestd);
 *   2. the chain: parse the credential certificate and the intermediate, verify the credential certificate's
 *      signature with the intermediate's key and the intermediate's with the root's (ECDSA, P-384 for the demo CA,
 *      as Apple's); the root is parsed once, as attestd keeps its roots parsed;
 *   3. the nonce: SHA-256(authData ‖ SHA-256(nonce bytes)) found in the credential certificate (its extension);
 *   4. the key id: SHA-256 of the credential public key against the credential id in authData.
 *
 * No strict CBOR rules, no validity dates, no RP ID, counter or AAGUID rules, no tenant's apps, no key stored, no
 * verdict stored: what it skips is what attestd adds.
 */
import { createHash, verify, X509Certificate, type KeyObject } from "node:crypto";
import { decode } from "cbor2";

const sha256 = (...parts: Uint8Array[]) => {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest();
};

/** The floor's whole job for one attestation: the key id (base64) when it holds, undefined otherwise. */
export function appAttestAttestationFloor(body: Uint8Array, nonce: string, rootKey: KeyObject): string | undefined {
  try {
    const o = decode(body) as Map<string, unknown> | Record<string, unknown>;
    const get = (m: unknown, k: string) => (m instanceof Map ? m.get(k) : (m as Record<string, unknown>)[k]);
    const attStmt = get(o, "attStmt");
    const x5c = get(attStmt, "x5c") as Uint8Array[];
    const authData = Buffer.from(get(o, "authData") as Uint8Array);
    const leaf = new X509Certificate(x5c[0]!);
    const intermediate = new X509Certificate(x5c[1]!);
    if (!intermediate.verify(rootKey) || !leaf.verify(intermediate.publicKey)) return undefined;
    const expected = sha256(authData, sha256(Buffer.from(nonce, "base64url")));
    if (!leaf.raw.includes(expected)) return undefined;
    const jwk = leaf.publicKey.export({ format: "jwk" });
    const keyId = sha256(Buffer.from([4]), Buffer.from(jwk.x!, "base64url"), Buffer.from(jwk.y!, "base64url"));
    // authData: rpIdHash 32, flags 1, counter 4, aaguid 16, credential id length 2, credential id
    return keyId.equals(authData.subarray(55, 87)) ? keyId.toString("base64") : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The App Attest assertion floor: the JSON body read, the CBOR assertion decoded, the ECDSA P-256 signature over
 * authenticatorData ‖ SHA-256(nonce bytes) verified with the key remembered for its key id (imported once), and the
 * counter compared with the last one kept and stored when greater (a Map, not a database). Answers the counter when
 * the signature holds (`fresh`: whether it moved the counter), undefined otherwise.
 */
export function appAttestAssertionFloor(
  body: Uint8Array,
  nonce: string,
  keys: ReadonlyMap<string, KeyObject>,
  counters: Map<string, number>,
): { keyId: string; counter: number; fresh: boolean } | undefined {
  try {
    const { keyId, assertion } = JSON.parse(Buffer.from(body).toString("utf8")) as { keyId: string; assertion: string };
    const key = keys.get(keyId);
    if (!key) return undefined;
    const a = decode(Buffer.from(assertion, "base64")) as Map<string, Uint8Array> | Record<string, Uint8Array>;
    const get = (k: string) => Buffer.from((a instanceof Map ? a.get(k) : a[k])!);
    const authData = get("authenticatorData");
    if (!verify("sha256", Buffer.concat([authData, sha256(Buffer.from(nonce, "base64url"))]), { key, dsaEncoding: "der" }, get("signature"))) return undefined;
    const counter = authData.readUInt32BE(33);
    const fresh = counter > (counters.get(keyId) ?? 0);
    if (fresh) counters.set(keyId, counter);
    return { keyId, counter, fresh };
  } catch {
    return undefined;
  }
}
