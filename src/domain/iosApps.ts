import type { IosEnvironment } from "../attestation/types.ts";

/**
 * A tenant's registered iOS app (issue 25; mobile-attestation.md, "Per-tenant configuration"): the app id
 * (TEAMID.BUNDLEID) App Attest keys must be attested for, and the environments whose keys it accepts. Nothing is
 * secret: App Attest needs no per-app key, Apple's root is the trust anchor.
 */
export interface StoredIosApp {
  /** opaque id of the registration (`ia_...`) */
  id: string;
  tenantId: string;
  appId: string;
  environment: IosEnvironment;
  createdAt: string;
}

/**
 * A key App Attest attested for a tenant (remembered after a Yes attestation, issue 25): its id is the device's
 * identity for this format. `counter` is the last assertion counter stored (0 after the attestation), moved only
 * forward, compare-and-set, with the verdict that moved it.
 */
export interface StoredAppAttestKey {
  tenantId: string;
  /** base64 (standard, padded) of the 32-byte key id: SHA-256 of the public key */
  keyId: string;
  appId: string;
  /** uncompressed EC P-256 point (65 bytes), base64 */
  publicKey: string;
  counter: number;
  environment: "production" | "development";
  /** Apple's receipt from the attestation, base64: what the receipt module refreshes with Apple */
  receipt: string;
  attestedAt: string;
  lastAssertedAt: string | null;
  revokedAt: string | null;
}

/** What a Yes asks the store to do with the verdict, in one transaction (AppAttestKeyStore.saveAppAttestVerdict). */
export type AppAttestKeyEffect =
  | { kind: "attested"; key: StoredAppAttestKey }
  | { kind: "asserted"; tenantId: string; keyId: string; counter: number; at: string };
