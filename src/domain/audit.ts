import type { Rng } from "../clock.ts";

/**
 * The audit trail (issue 26, item 2; docs/audit.md): one record per change of state made through the services, with
 * who made it, from where, what it changed and the record before and after, secrets removed. Verdicts and nonces
 * are not audit events: they are the activity log's (src/domain/activity.ts).
 */

/** Who made a change. */
export type AuditActor =
  /** a portal user, signed in */
  | { kind: "user"; id: string; email: string }
  /** a Part B API client (its client id), or a caller of the admin API by an API key (the key id) */
  | { kind: "api-client"; id: string }
  /** an operator at the CLI: the OS user that ran `attestd` */
  | { kind: "operator"; id: string }
  /** attestd itself (a timer: the EAR signing key rotation, a session that expired) */
  | { kind: "system"; id: string };

export const AUDIT_ACTOR_KINDS = ["user", "api-client", "operator", "system"] as const satisfies readonly AuditActor["kind"][];

/** Where a change came from: an HTTP request (its remote address and user agent), the CLI (its host), attestd. */
export type AuditSource =
  | { kind: "http"; remoteAddress: string; userAgent: string | null }
  | { kind: "cli"; hostname: string }
  | { kind: "system" };

/** What one change is, as a service states it; the recorder adds the id, the time, the actor and the source. */
export interface AuditChange {
  /** the tenant the change belongs to; null for an operator-wide change (a global reference set, a signing key) */
  tenantId: string | null;
  /** a stable dotted name: `tenant.created`, `key.revoked`, `portal.user.signed-in` (docs/audit.md lists them) */
  action: string;
  target: { kind: string; id: string };
  /** the record before and after the change (null when there was none), passed through `redactSecrets` */
  before?: unknown;
  after?: unknown;
}

/** One audit record as stored and read back. */
export interface AuditRecord {
  /** `au_` and 30 characters that sort as the records were made (`newAuditId`) */
  id: string;
  /** ISO 8601, the recorder's clock */
  time: string;
  actor: AuditActor;
  tenantId: string | null;
  action: string;
  target: { kind: string; id: string };
  before: unknown;
  after: unknown;
  from: AuditSource;
}

/** What `redactSecrets` leaves where a secret was. */
export const REDACTED = "[redacted]";

/**
 * Field names whose values are secrets (or their hashes, or the material they are sealed from), in any record an
 * audit entry may copy: API key secrets and hashes, password hashes, invite / session / challenge hashes, CSRF
 * tokens, private and response keys, service-account files, client secrets and JWKs, sealed values. Matched
 * case-insensitively against the whole field name with `_` and `-` removed.
 */
const SECRET_FIELD = new RegExp(
  "^(" +
    [
      "key",
      "apikey",
      "secret",
      "[a-z]*secret[a-z]*",
      "[a-z]*hash",
      "[a-z]*password[a-z]*",
      "[a-z]*token[a-z]*",
      "[a-z]*private[a-z]*",
      "[a-z]*pem",
      "decryptionkey",
      "verificationkey",
      "serviceaccount[a-z]*",
      "developerkey",
      "[a-z]*credential[a-z]*",
      "sealed[a-z]*",
      "receipt",
      "[a-z]*jwks?",
      "publickey",
      "publicjwk",
    ].join("|") +
    ")$",
  "i",
);

/** A value that is itself a secret whatever its field is called: a sealed value, a PEM private key, an API key. */
function secretValue(s: string): boolean {
  return s.startsWith("sealed:") || /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(s) || /^atd_[a-z2-7]{10}_[A-Za-z0-9_-]{16,}$/.test(s);
}

/**
 * A deep copy of `value` fit for the audit trail: every field named as a secret (SECRET_FIELD) is removed, every
 * string that is a secret wherever it sits (sealed, a private key PEM) becomes REDACTED, Dates become ISO text,
 * Buffers and typed arrays become REDACTED (key material). Cycles are cut. The one home for what "secrets never"
 * means in audit records: the recorder passes every before and after through it.
 */
export function redactSecrets(value: unknown): unknown {
  const seen = new WeakSet<object>();
  const walk = (v: unknown): unknown => {
    if (v === null || v === undefined) return v ?? null;
    if (typeof v === "string") return secretValue(v) ? REDACTED : v;
    if (typeof v === "number" || typeof v === "boolean") return v;
    if (typeof v === "bigint") return v.toString();
    if (typeof v !== "object") return null;
    if (v instanceof Date) return v.toISOString();
    if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer) return REDACTED;
    if (seen.has(v)) return null;
    seen.add(v);
    if (Array.isArray(v)) return v.map(walk);
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined || typeof x === "function") continue;
      if (SECRET_FIELD.test(k.replace(/[-_]/g, ""))) continue;
      out[k] = walk(x);
    }
    return out;
  };
  return walk(value);
}

/** Crockford's base32 in lower case: its ASCII order is its numeric order, in SQLite, PostgreSQL and JavaScript alike */
const SORTABLE_BASE32 = "0123456789abcdefghjkmnpqrstvwxyz";

function sortableBase32(n: number, width: number): string {
  let out = "";
  for (let i = 0; i < width; i++, n = Math.floor(n / 32)) out = SORTABLE_BASE32[n % 32]! + out;
  return out;
}

/**
 * An audit record's id: `au_`, the milliseconds (10 characters), a sequence within that millisecond (4), then 80
 * random bits (16). Records are read newest first by (time, id), so records one process made in the same
 * millisecond (a sign-in that also links an identity, a bulk change) read back in the order they were made, where a
 * random id shuffled them. Records of different processes in one millisecond have no order to keep; the random
 * part keeps every id unique.
 */
export function newAuditId(nowMs: number, sequence: number, rng: Rng): string {
  const random = rng.bytes(10);
  const ms = Math.max(0, Math.min(nowMs, 32 ** 10 - 1));
  return `au_${sortableBase32(ms, 10)}${sortableBase32(Math.min(sequence, 32 ** 4 - 1), 4)}${sortableBase32(random.readUIntBE(0, 5), 8)}${sortableBase32(random.readUIntBE(5, 5), 8)}`;
}
