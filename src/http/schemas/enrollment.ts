import { Type } from "typebox";
import { MAX_REFERER_PATTERN_LENGTH } from "../../auth/refererPattern.ts";
import { MAX_IP_ENTRY_LENGTH, MAX_RESTRICTION_ENTRIES } from "../../auth/restrictions.ts";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_NUM, MAX_PAGE_SIZE } from "../../enrollment/paging.ts";
import { PROFILE_LIMITS } from "../../enrollment/profiles.ts";
import { SafeText } from "./common.ts";
import { MAX_JWT_LENGTH, MAX_VALIDITY_MINUTES, MIN_VALIDITY_MINUTES } from "../../enrollment/tokens.ts";

/** Part B request and response schemas (enrollment-api.md). Every string and list is bounded. */

const ID = { maxLength: 64 } as const;
const ISO = Type.String({ description: "ISO 8601 UTC" });

export const PagingQuery = {
  pageNum: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_PAGE_NUM, default: 0, description: "0-based" })),
  pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE })),
};

// ---- auth ----
export const AccessTokenRequest = Type.Object(
  {
    clientIdentifierJwt: Type.String({ maxLength: MAX_JWT_LENGTH }),
    base64EncodedStringPublicKey: Type.String({ maxLength: 2048 }),
    validityForAccessTokenInMinutes: Type.Optional(
      Type.Integer({ minimum: MIN_VALIDITY_MINUTES, maximum: MAX_VALIDITY_MINUTES, default: MAX_VALIDITY_MINUTES }),
    ),
  },
  { additionalProperties: false },
);
export const AccessTokenResponse = Type.Object({ accessToken: Type.String() });

// ---- profiles ----
/**
 * Checked by validateProfile, not here: the app's Ajv coerces types, which in a union turns true into "true" or 1
 * into true, and a type list draws a strict-mode warning. The body limit and maxProperties bound the input.
 */
const SettingValue = Type.Unknown({ description: "a string (at most 1024 characters), a finite number or a boolean" });
const Settings = Type.Record(Type.String(), SettingValue, { maxProperties: PROFILE_LIMITS.settingsKeys });

export const ProfileBody = Type.Object(
  {
    name: SafeText({ minLength: 1, maxLength: PROFILE_LIMITS.name }),
    description: Type.Optional(Type.String({ maxLength: PROFILE_LIMITS.description })),
    mdmUrl: Type.Optional(Type.String({ maxLength: PROFILE_LIMITS.mdmUrl })),
    settings: Type.Optional(Settings),
  },
  { additionalProperties: false },
);

export const ProfileView = Type.Object({
  profileId: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  mdmUrl: Type.Optional(Type.String()),
  settings: Type.Optional(Settings),
  createdDate: ISO,
  updatedDate: ISO,
});

export const ProfileParams = Type.Object({ profileId: Type.String(ID) });
export const ProfileMutation = Type.Object({ transactionId: Type.String(), profileId: Type.String() });
export const ProfileListQuery = Type.Object(PagingQuery, { additionalProperties: false });
export const ProfileList = Type.Object({
  totalCount: Type.Integer(),
  totalPage: Type.Integer(),
  pageNum: Type.Integer(),
  profiles: Type.Array(ProfileView),
});

const TransactionTypeFilter = Type.Union([Type.Literal("Post"), Type.Literal("Put"), Type.Literal("Delete")]);
const TransactionStateFilter = Type.Union([Type.Literal("Processing"), Type.Literal("Complete"), Type.Literal("Failed")]);

/** Empty parameters mean "not given" (the routes drop them before validation; the spec's example sends them empty). */
export const StatusQuery = Type.Object(
  {
    ...PagingQuery,
    type: Type.Optional(TransactionTypeFilter),
    state: Type.Optional(TransactionStateFilter),
    profileId: Type.Optional(Type.String(ID)),
  },
  { additionalProperties: false },
);

export const TransactionView = Type.Object({
  tenantId: Type.String(),
  transactionId: Type.String(),
  type: Type.String(),
  state: Type.String(),
  profileId: Type.String(),
  profileName: Type.String(),
});

export const ProfileStatus = Type.Object({
  profiles: Type.Object({
    totalCount: Type.Integer(),
    totalPage: Type.Integer(),
    pageNum: Type.Integer(),
    transactions: Type.Array(TransactionView),
  }),
});

// ---- devices ----
const DeviceId = Type.String({ maxLength: 64 });

export function deviceUploadBody(maxDevices: number) {
  return Type.Object(
    {
      customerId: Type.Optional(Type.String({ maxLength: 32 })),
      profileId: Type.String({ minLength: 1, maxLength: 64 }),
      devices: Type.Array(
        Type.Object(
          {
            deviceId: DeviceId,
            userId: Type.Optional(SafeText({ minLength: 1, maxLength: 254 })),
            userPassword: Type.Optional(Type.String({ maxLength: 1024, description: "base64 RSA-OAEP-256 ciphertext" })),
          },
          { additionalProperties: false },
        ),
        { maxItems: maxDevices },
      ),
    },
    { additionalProperties: false },
  );
}

export const TransactionRef = Type.Object({ transactionId: Type.String() });

export const DeviceQuery = Type.Object(
  {
    transactionId: Type.Optional(Type.String(ID)),
    profileId: Type.Optional(Type.String(ID)),
    ...PagingQuery,
  },
  { additionalProperties: false },
);

export const DeviceError = Type.Object({ code: Type.String(), message: Type.String(), reason: Type.String() });

export const DeviceList = Type.Object({
  totalCount: Type.Integer(),
  processingCount: Type.Integer(),
  deviceList: Type.Array(
    Type.Object({
      deviceId: Type.String(),
      profileId: Type.Optional(Type.String()),
      state: Type.String(),
      updatedDate: ISO,
      error: Type.Optional(DeviceError),
    }),
  ),
});

export function assignBody(maxDevices: number) {
  return Type.Object(
    { profileId: Type.String({ minLength: 1, maxLength: 64 }), deviceIds: Type.Array(DeviceId, { maxItems: maxDevices }) },
    { additionalProperties: false },
  );
}

export function unassignBody(maxDevices: number) {
  return Type.Object({ deviceIds: Type.Array(DeviceId, { maxItems: maxDevices }) }, { additionalProperties: false });
}

export const CountResponse = Type.Object({ count: Type.Integer() });

// ---- resellers ----
export const ResellerAssociate = Type.Object(
  { resellerId: SafeText({ minLength: 1, maxLength: 64 }) },
  { additionalProperties: false },
);
export const ResellerView = Type.Object({ resellerId: Type.String(), name: Type.String(), associatedDate: ISO });
export const ResellerList = Type.Object({ resellers: Type.Array(ResellerView) });

// ---- API-key restrictions ----
export const KeyParams = Type.Object({ keyId: Type.String({ minLength: 1, maxLength: 64 }) });
export const RestrictionBody = Type.Object(
  {
    ipAddresses: Type.Optional(
      Type.Array(Type.String({ maxLength: MAX_IP_ENTRY_LENGTH }), { maxItems: MAX_RESTRICTION_ENTRIES }),
    ),
    referers: Type.Optional(
      Type.Array(Type.String({ maxLength: MAX_REFERER_PATTERN_LENGTH }), { maxItems: MAX_RESTRICTION_ENTRIES }),
    ),
  },
  { additionalProperties: false },
);
/** A key's or client's restrictions as stored: null when it has none. */
export const StoredRestrictions = Type.Union([Type.Object({ ipAddresses: Type.Array(Type.String()), referers: Type.Array(Type.String()) }), Type.Null()]);

export const RestrictionView = Type.Object({
  keyId: Type.String(),
  kind: Type.Union([Type.Literal("apiKey"), Type.Literal("client")]),
  ipAddresses: Type.Array(Type.String()),
  referers: Type.Array(Type.String()),
});

// ---- tenant ----
export const EncryptionKey = Type.Object({
  algorithm: Type.Literal("RSA-OAEP-256"),
  format: Type.Literal("spki-der-base64"),
  publicKey: Type.String(),
});
