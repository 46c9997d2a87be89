import { appraise } from "../../src/attestation/appraise.ts";
import type { AppAttestKnownKey, AppraisalResult, IosAppPolicy, TrustConfig } from "../../src/attestation/types.ts";
import { DEMO_APP_ID, makeAppAttestCa, type AppAttestCa, type SimAppAttestKey } from "../../src/attestation/sim/appAttest.ts";
import { createPublicKey, createPrivateKey } from "node:crypto";

export const NOW = new Date("2026-11-26T12:00:00.000Z");
export const NONCE = Buffer.alloc(32, 0x25).toString("base64url");
export const APPS: IosAppPolicy[] = [{ appId: DEMO_APP_ID, environment: "production" }];

let caPromise: Promise<AppAttestCa> | undefined;
export const demoCa = () => (caPromise ??= makeAppAttestCa(NOW));

export function trustOf(ca: AppAttestCa): TrustConfig {
  return {
    vendor: { rootsDer: [], revocations: new Map(), referenceValues: [] },
    android: { pinnedRootSpkiSha256: new Set(), rootsDer: [], status: new Map(), fresh: false, allowedBootKeys: [], policy: {} },
    appAttest: { rootsDer: [ca.rootDer] },
  };
}

/** The key as the store would hand it to an assertion's appraisal after the attestation. */
export function knownKey(k: SimAppAttestKey, over: Partial<AppAttestKnownKey> = {}): AppAttestKnownKey {
  const jwk = createPublicKey(createPrivateKey(k.privateKeyPem)).export({ format: "jwk" });
  const point = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, "base64url"), Buffer.from(jwk.y!, "base64url")]);
  return { keyId: k.keyId, appId: k.appId, publicKey: point.toString("base64"), counter: k.counter, revoked: false, ...over };
}

export async function appraiseAttestation(blob: Uint8Array, o: { apps?: IosAppPolicy[]; nonce?: string; now?: Date } = {}): Promise<AppraisalResult> {
  return appraise({ blob, nonce: o.nonce ?? NONCE, trust: trustOf(await demoCa()), now: o.now ?? NOW, appAttest: { apps: o.apps ?? APPS } });
}

export async function appraiseAssertion(body: Uint8Array, key: AppAttestKnownKey | undefined, nonce = NONCE): Promise<AppraisalResult> {
  return appraise({ blob: body, nonce, trust: trustOf(await demoCa()), now: NOW, appAttest: { apps: [], key } });
}
