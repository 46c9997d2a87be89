/**
 * Every column that holds a sealed secret (src/secrets/secretBox.ts), on every SQL backend. The service that owns a
 * secret seals it with `sealContext(purpose, <the row's id>)` before storing it and opens it with the same context;
 * the stores' `sealAll` walks this list at start-up to seal plaintext from before sealing and to reseal after a key
 * rotation. A new secret column: add it here and seal it in its service; nothing else changes.
 */
export interface SealedColumn {
  table: string;
  /** the column identifying the row; its value is the record id in the seal context */
  idColumn: string;
  column: string;
  /** what the value is, the first part of its seal context */
  purpose: string;
}

export const TENANT_PRIVATE_KEY_PURPOSE = "tenant-private-key";
export const EAR_SIGNING_KEY_PURPOSE = "ear-signing-key";
export const PLAY_APP_SECRET_PURPOSE = "play-app-secret";
export const WEBHOOK_SECRET_PURPOSE = "webhook-secret";
export const IOS_APP_DEVELOPER_KEY_PURPOSE = "ios-app-developer-key";

export const SEALED_COLUMNS: readonly SealedColumn[] = [
  { table: "tenant_encryption_keys", idColumn: "tenant_id", column: "private_key", purpose: TENANT_PRIVATE_KEY_PURPOSE },
  { table: "ear_signing_keys", idColumn: "kid", column: "private_key", purpose: EAR_SIGNING_KEY_PURPOSE },
  // a Play app's response keys or service account (src/services/playApps.ts)
  { table: "play_apps", idColumn: "id", column: "secret", purpose: PLAY_APP_SECRET_PURPOSE },
  // a webhook endpoint's signing secrets (src/services/webhooks.ts)
  { table: "webhook_endpoints", idColumn: "id", column: "secret", purpose: WEBHOOK_SECRET_PURPOSE },
  // an iOS app's App Attest developer key, for receipt refresh (src/services/iosApps.ts; NULL when none)
  { table: "ios_apps", idColumn: "id", column: "developer_key", purpose: IOS_APP_DEVELOPER_KEY_PURPOSE },
];
