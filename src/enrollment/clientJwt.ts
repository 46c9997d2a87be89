import { createPrivateKey, randomUUID } from "node:crypto";
import { SignJWT, type JWTPayload } from "jose";
import { AUDIENCE } from "../domain/enrollment.ts";

/**
 * The client's side of the Part B token flow (enrollment-api.md, "Authentication"): what an integrator's code does
 * with keys.json. The server never runs this; the CLI helpers, the docs walk-through and the tests do.
 */

export const ALGORITHM = "RS512";

/** keys.json as `attestd client create` writes it. */
export interface ClientKeys {
  /** base64 SPKI DER */
  Public: string;
  /** base64 PKCS#8 DER */
  Private: string;
  Identifier: string;
}

export function parseClientKeys(json: string): ClientKeys {
  const k = JSON.parse(json) as Partial<ClientKeys>;
  if (typeof k.Public !== "string" || typeof k.Private !== "string" || typeof k.Identifier !== "string") {
    throw new Error("keys file must hold Public, Private and Identifier strings");
  }
  return { Public: k.Public, Private: k.Private, Identifier: k.Identifier };
}

/** keys.json's text, byte for byte what `attestd client create --out` writes and the portal's download holds. */
export function formatClientKeys(keys: ClientKeys): string {
  return JSON.stringify({ Public: keys.Public, Private: keys.Private, Identifier: keys.Identifier }, null, 2) + "\n";
}

export interface SignOptions {
  nowMs: number;
  jti?: string;
  /** seconds after `nowMs`; omitted = no exp claim */
  expiresInSec?: number;
  audience?: string;
}

/** Signs any claims the way a client does (RS512, aud, jti, iat); tests use it to build deliberately wrong JWTs. */
export async function signClientJwt(privateKeyB64: string, claims: JWTPayload, o: SignOptions): Promise<string> {
  const key = createPrivateKey({ key: Buffer.from(privateKeyB64, "base64"), format: "der", type: "pkcs8" });
  const iat = Math.floor(o.nowMs / 1000);
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: ALGORITHM, typ: "JWT" })
    .setAudience(o.audience ?? AUDIENCE)
    .setJti(o.jti ?? randomUUID())
    .setIssuedAt(iat);
  if (o.expiresInSec !== undefined) jwt.setExpirationTime(iat + o.expiresInSec);
  return jwt.sign(key);
}

export interface AccessTokenRequestBody {
  clientIdentifierJwt: string;
  base64EncodedStringPublicKey: string;
  validityForAccessTokenInMinutes: number;
}

/** The body of POST /svc/v1/auth/accesstoken. */
export async function accessTokenRequest(
  keys: ClientKeys,
  o: { nowMs: number; validityMinutes?: number; jti?: string },
): Promise<AccessTokenRequestBody> {
  const clientIdentifierJwt = await signClientJwt(
    keys.Private,
    { clientIdentifier: keys.Identifier, publicKey: keys.Public },
    { nowMs: o.nowMs, expiresInSec: 300, ...(o.jti ? { jti: o.jti } : {}) },
  );
  return {
    clientIdentifierJwt,
    base64EncodedStringPublicKey: keys.Public,
    validityForAccessTokenInMinutes: o.validityMinutes ?? 30,
  };
}

/** A value for the x-vendor-apitoken header: one per request (each carries a fresh jti). */
export function apiToken(keys: ClientKeys, accessToken: string, o: { nowMs: number; jti?: string }): Promise<string> {
  return signClientJwt(
    keys.Private,
    { accessToken, publicKey: keys.Public },
    { nowMs: o.nowMs, ...(o.jti ? { jti: o.jti } : {}) },
  );
}
