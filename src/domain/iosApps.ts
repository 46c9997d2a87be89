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
  /**
   * The id (10 characters, the JWT's `kid`) of the team's App Attest developer key registered for receipt refresh
   * (migration 016); null when none. The key itself is `sealedDeveloperKey`, and shown nowhere.
   */
  developerKeyId: string | null;
  /** the .p8 key's PEM, sealed bound to the registration's id (IOS_APP_DEVELOPER_KEY_PURPOSE); null when none */
  sealedDeveloperKey: string | null;
}

/** A registration as lists and answers show it: the developer key only as set or not, and its key id. */
export type IosAppSummary = Omit<StoredIosApp, "sealedDeveloperKey" | "developerKeyId"> & {
  developerKey: { keyId: string } | null;
};

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
  /**
   * Receipt refresh (migration 016; docs/app-attest.md "Refreshing"): Apple's fraud-risk metric from the last
   * refreshed receipt, and when it was read (null until one was); the last refresh attempt's outcome
   * (`ReceiptRefreshResult`), its reason in a tenant's words (null when refreshed) and time; and when the next
   * refresh is due (the attestation's time for a new key, a refreshed receipt's not-before, a later retry after a
   * failure; null: never again, the receipt expired).
   */
  riskMetric: number | null;
  riskMetricAt: string | null;
  lastRefreshResult: string | null;
  lastRefreshReason: string | null;
  lastRefreshAt: string | null;
  refreshDueAt: string | null;
}

/** What one refresh attempt writes to its key (AppAttestStore.saveAppAttestRefresh). */
export interface AppAttestRefreshOutcome {
  tenantId: string;
  keyId: string;
  result: string;
  /** null when refreshed */
  reason: string | null;
  at: string;
  /** when refreshed: the new receipt (base64), to keep in place of the old one, and its metric (null: none in it) */
  refreshed?: { receipt: string; riskMetric: number | null };
  refreshDueAt: string | null;
}

/** What a Yes asks the store to do with the verdict, in one transaction (AppAttestKeyStore.saveAppAttestVerdict). */
export type AppAttestKeyEffect =
  | { kind: "attested"; key: StoredAppAttestKey }
  | { kind: "asserted"; tenantId: string; keyId: string; counter: number; at: string };
