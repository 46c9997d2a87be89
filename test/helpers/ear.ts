import { createPublicKey, type JsonWebKey } from "node:crypto";
import jwt from "jsonwebtoken";
import type { EarClaims } from "../../src/results/ear.ts";

/**
 * A relying party's verification of a signed result, written with `jsonwebtoken` and node:crypto rather than the
 * `jose` that signs them, so an EAR that passes here was checked by an independent JWS implementation: the header's
 * kid picks the key from the JWKS, the algorithm is the key's own (never the header's alone), and the signature
 * must verify. Throws when any of that fails.
 */
export function verifyEar(token: string, jwks: { keys: (JsonWebKey & { kid?: string; alg?: string })[] }): EarClaims {
  const decoded = jwt.decode(token, { complete: true });
  if (!decoded || typeof decoded.payload === "string") throw new Error("not a JWT");
  const jwk = jwks.keys.find((k) => k.kid === decoded.header.kid);
  if (!jwk) throw new Error(`no key with kid ${decoded.header.kid} in the JWKS`);
  const key = createPublicKey({ key: jwk, format: "jwk" });
  return jwt.verify(token, key, { algorithms: [jwk.alg as jwt.Algorithm] }) as unknown as EarClaims;
}

/** The protected header of a compact JWS, unverified. */
export function earHeader(token: string): { alg: string; kid: string; typ?: string } {
  return JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString("utf8"));
}
