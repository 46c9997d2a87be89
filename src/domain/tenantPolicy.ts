import type { IntegrityLabel } from "../attestation/types.ts";

/**
 * A tenant's appraisal policy (issue 26, item 3; docs/policy.md): a JSON document, versioned in the store. Every
 * section and field is optional: what the document leaves out is the operator's default (`--android-policy`'s
 * `default`, the operator's boot-key allow-list, each registered app's own settings).
 */
export interface TenantPolicyDocument {
  android?: AndroidPolicySection;
  playIntegrity?: PlayIntegrityPolicySection;
  appAttest?: AppAttestPolicySection;
}

export interface AndroidPolicySection {
  /** only these apps (package name, and one of the signing-certificate SHA-256 digests when listed) */
  allowedApps?: { packageName: string; signatureDigests?: string[] }[];
  /** `YYYY-MM` or `YYYY-MM-DD`: osPatchLevel must be at least this */
  minOsPatchLevel?: string;
  /** the lowest security level that passes: TrustedEnvironment (the rules' own floor) or StrongBox */
  requiredSecurityLevel?: "TrustedEnvironment" | "StrongBox";
  /** expired factory intermediates of a pre-RKP chain: accept (the default) or refuse */
  factoryExpiry?: "accept" | "refuse";
  /** verified-boot keys of alternative OSes this tenant trusts, added to the operator's allow-list */
  allowedBootKeys?: { key: string; label: string; models?: string[] }[];
}

/**
 * A floor under every registered Play app of the tenant: an app's own `deviceFloor` applies when it is higher, this
 * one when the app's is lower. The per-app settings (package, digests, age, signals) stay with the app.
 */
export interface PlayIntegrityPolicySection {
  minDeviceVerdict?: IntegrityLabel;
}

/** The App Attest environments the tenant admits at all, whatever a registered app allows. */
export interface AppAttestPolicySection {
  environments?: ("production" | "development")[];
}

/** One immutable version of a tenant's policy: the highest is in force. */
export interface TenantPolicyVersion {
  tenantId: string;
  /** 1, 2, 3, … per tenant */
  version: number;
  createdAt: string;
  /** who made it, as text for now: a portal user's email, `operator:<os user>` at the CLI, `seed:--android-policy` */
  author: string;
  document: TenantPolicyDocument;
}
