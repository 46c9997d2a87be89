import { SignJWT } from "jose";
import type { Clock } from "../clock.ts";
import { PACKAGE_VERSION } from "../packageInfo.ts";
import type { StoredVerdict } from "../domain/verdicts.ts";
import { earClaims, type VerifierId } from "./ear.ts";
import type { EarKeyRing, PublicJwk } from "./signingKeys.ts";

/** Who appraised: attestd, and the build (its package version), as `ear.verifier-id` names them. */
export const VERIFIER_ID: VerifierId = {
  developer: "attestd",
  build: `attestd ${PACKAGE_VERSION}`,
};

/**
 * Issues signed results: a stored verdict → its EAR as a compact JWS (a JWT) signed with the current key, `kid` in
 * the header; and the public keys to verify them with (GET /.well-known/jwks.json). What the claims say is ear.ts's.
 */
export class EarIssuer {
  constructor(
    private readonly keys: EarKeyRing,
    private readonly clock: Clock,
    private readonly verifierId: VerifierId = VERIFIER_ID,
  ) {}

  async ear(v: StoredVerdict): Promise<string> {
    const { kid, alg, key } = this.keys.signingKey();
    const claims = earClaims(v, this.clock.nowMs(), this.verifierId);
    return new SignJWT({ ...claims }).setProtectedHeader({ alg, kid, typ: "JWT" }).sign(key);
  }

  jwks(): { keys: PublicJwk[] } {
    return { keys: this.keys.publicKeys() };
  }
}
