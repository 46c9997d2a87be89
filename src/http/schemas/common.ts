import { Type, type TSchema } from "typebox";
import { VERDICT_FIELDS } from "../../attestation/types.ts";
import { EAR_MEDIA_TYPE } from "../../results/ear.ts";
import { DEVICE_ID_PATTERN } from "../../domain/devices.ts";
import { SAFE_TEXT_PATTERN } from "../../domain/text.ts";
import { NONCE_PATTERN } from "../../nonces/nonce.ts";

export const PartAError = Type.Object(
  {
    result: Type.Literal("FAIL"),
    error: Type.Object({ code: Type.String(), message: Type.String(), reason: Type.String() }),
  },
  { $id: "PartAError", description: "Part A error body (attestation-api.md)" },
);

export const PartBError = Type.Object(
  {
    errorId: Type.String(),
    code: Type.String(),
    message: Type.String(),
    data: Type.Optional(Type.String()),
  },
  { $id: "PartBError", description: "Part B error body (enrollment-api.md)" },
);

/** Properties in wire order: fast-json-stringify writes them in schema order, which the spec fixes. */
export const VerdictRecord = Type.Object(
  Object.fromEntries(VERDICT_FIELDS.map((f) => [f, Type.String()])) as unknown as Record<(typeof VERDICT_FIELDS)[number], TSchema>,
  { $id: "VerdictRecord", description: "The eleven-field verdict record; every field a string" },
);

/** A relying party's name for a device: the `deviceId` query parameter, batch item field and route parameter. */
export const DeviceIdSchema = Type.String({
  pattern: DEVICE_ID_PATTERN,
  minLength: 1,
  maxLength: 128,
  description: "the relying party's name for the device (docs/devices.md): 1-128 of A-Z a-z 0-9 . _ : -",
  examples: ["account-4711.phone-1"],
});

/**
 * An identifier, label or name a person gives (an email, a key label, a tenant, profile or passkey name): a string
 * with no control or bidi formatting character (src/domain/text.ts), refused with the route's invalid-input code.
 */
export function SafeText(options: NonNullable<Parameters<typeof Type.String>[0]> = {}) {
  return Type.String({ ...options, pattern: SAFE_TEXT_PATTERN });
}

/** A nonce: what POST /v2/nonces answers, and what POST /v2/blobs takes in its `nonce` query parameter. */
export const NonceSchema = Type.String({
  pattern: NONCE_PATTERN,
  description:
    "a single-use nonce from POST /v2/nonces (base64url of 32 random bytes), for one blob of the tenant that asked, " +
    "until it expires",
});

const ref = (id: string) => Type.Unsafe<unknown>({ $ref: `${id}#` });

/**
 * Every route these describe reaches a store, so each may also answer 503 SERVICE_UNAVAILABLE (a store unreachable,
 * or the SQLite file locked by another process past --sqlite-lock-wait-ms): listed always.
 */
const errorStatuses = (statuses: number[]) => [...new Set([...statuses, 503])];

/** Response-schema entries for Part A error statuses (503 included). */
export function partAErrors(...statuses: number[]): Record<number, TSchema> {
  return Object.fromEntries(errorStatuses(statuses).map((s) => [s, ref("PartAError")]));
}

/** Response-schema entries for Part B error statuses (503 included). */
export function partBErrors(...statuses: number[]): Record<number, TSchema> {
  return Object.fromEntries(errorStatuses(statuses).map((s) => [s, ref("PartBError")]));
}

export const verdictRecordRef = ref("VerdictRecord");

/** A signed result: the compact serialisation of a JWS (docs/results.md says what its payload holds). */
export const EarJwt = Type.String({
  $id: "EarJwt",
  pattern: "^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$",
  description:
    "An EAR (draft-ietf-rats-ear, profile tag:github.com,2023:veraison/ear) as a JWT signed by attestd; " +
    "verify it with the keys at GET /.well-known/jwks.json (docs/results.md)",
});

/**
 * A 200 answer that is `json` by default and the signed result alone when Accept chooses application/eat+jwt (the
 * route sets `offersEar`). XML, like everywhere in Part A, follows the JSON schema's fields.
 */
export function jsonOrEar(json: TSchema, description: string) {
  return {
    description,
    content: {
      "application/json": { schema: json },
      [EAR_MEDIA_TYPE]: { schema: ref("EarJwt") },
    },
  };
}

export const sharedSchemas = [PartAError, PartBError, VerdictRecord, EarJwt];
