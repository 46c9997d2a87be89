import { Type } from "typebox";
import { catalog } from "../../errors/catalog.ts";
import { AppError, isAppError } from "../../errors/AppError.ts";
import { UNSAFE_TEXT_CHARS } from "../../domain/text.ts";
import { sendBody } from "../render.ts";
import { DeviceIdSchema, partAErrors } from "../schemas/common.ts";
import type { AppDeps, AppInstance } from "../types.ts";
import { methodNotAllowed, partAGuards } from "./guards.ts";

/**
 * A requestedId is echoed in the answer, in XML too, and listed with its verdict: control characters (C0, DEL, C1)
 * and bidi formatting characters (src/domain/text.ts, the rule every name follows) and what XML 1.0 cannot carry at
 * all (lone surrogates, U+FFFE, U+FFFF) are refused, 400 INVALID_REQUEST, rather than altered on the way back
 * (render.ts would write them as U+FFFD) or shown reordered.
 */
const REQUESTED_ID_PATTERN = `^[^${UNSAFE_TEXT_CHARS}\\p{Cs}\\uFFFE\\uFFFF]+$`;

const Item = Type.Object(
  {
    requestedId: Type.String({ minLength: 1, maxLength: 256, pattern: REQUESTED_ID_PATTERN }),
    nonce: Type.Optional(Type.String({ maxLength: 256 })),
    blob: Type.String(),
    deviceId: Type.Optional(DeviceIdSchema),
  },
  { additionalProperties: false },
);

const ItemResult = Type.Union([
  Type.Object({
    result: Type.Literal("SUCCESS"),
    objectId: Type.String(),
    requestedId: Type.String(),
    // with "result": "ear" in the request: the item's signed result (docs/results.md)
    ear: Type.Optional(Type.Unsafe<string>({ $ref: "EarJwt#" })),
  }),
  Type.Object({
    result: Type.Literal("FAIL"),
    requestedId: Type.String(),
    error: Type.Object({ code: Type.String(), message: Type.String(), reason: Type.String() }),
  }),
]);

const BASE64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

type ItemOutcome =
  | { result: "SUCCESS"; objectId: string; requestedId: string; ear?: string }
  | { result: "FAIL"; requestedId: string; error: { code: string; message: string; reason: string } };

/**
 * POST /api/v1/transaction: many blobs in one request, each checked exactly as a POST /v2/blobs would be (nonce
 * rules included). Items run one after another so each nonce is consumed in request order. `"result": "ear"` adds
 * each successful item's signed result (EAR).
 */
export function registerTransactionRoutes(app: AppInstance, deps: AppDeps): void {
  const { maxBatch, maxBlobBytes } = deps.limits;
  const maxItemChars = Math.ceil(maxBlobBytes / 3) * 4;

  methodNotAllowed(app, "/api/v1/transaction", ["POST"]);
  app.post(
    "/api/v1/transaction",
    {
      onRequest: partAGuards(deps),
      // room for maxBatch full-size items plus JSON overhead; more items than that are refused by count below
      bodyLimit: (maxBatch + 1) * (maxItemChars + 1024),
      config: { tooLargeEntry: catalog.BATCH_TOO_LARGE },
      schema: {
        tags: ["attestation"],
        operationId: "appraiseBatch",
        summary: "Appraise a batch of blobs",
        security: [{ apiKey: [] }],
        body: Type.Object(
          {
            items: Type.Array(Item),
            result: Type.Optional(
              Type.Literal("ear", { description: "add each successful item's signed result (EAR) to its entry as `ear`" }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            count: Type.Integer(),
            success: Type.Integer(),
            fail: Type.Integer(),
            resultList: Type.Array(ItemResult),
          }),
          ...partAErrors(400, 401, 403, 405, 406, 415, 422, 429, 500),
        },
      },
    },
    async (request, reply) => {
      const { items, result } = request.body;
      if (items.length > maxBatch) throw new AppError(catalog.BATCH_TOO_LARGE, `At most ${maxBatch} items per batch`);
      const tenant = request.principal!.tenant;
      const resultList: ItemOutcome[] = [];
      for (const item of items) {
        try {
          if (item.blob.length > maxItemChars) {
            throw new AppError(catalog.BLOB_TOO_LARGE, `The blob exceeds ${maxBlobBytes} bytes`);
          }
          if (!BASE64_RE.test(item.blob)) throw new AppError(catalog.INVALID_REQUEST, "blob is not base64");
          const blob = Buffer.from(item.blob, "base64");
          if (blob.length > maxBlobBytes) throw new AppError(catalog.BLOB_TOO_LARGE, `The blob exceeds ${maxBlobBytes} bytes`);
          const stored = await deps.attestation.submitBlob(tenant, item.nonce, blob, { deviceId: item.deviceId });
          resultList.push({
            result: "SUCCESS",
            objectId: stored.objectId,
            requestedId: item.requestedId,
            ...(result === "ear" ? { ear: await deps.results.ear(stored) } : {}),
          });
        } catch (err) {
          if (!isAppError(err) || err.entry.status >= 500 && err.entry !== catalog.NOT_IMPLEMENTED) throw err;
          resultList.push({
            result: "FAIL",
            requestedId: item.requestedId,
            error: { code: err.entry.code, message: err.entry.message, reason: err.reason },
          });
        }
      }
      const success = resultList.filter((r) => r.result === "SUCCESS").length;
      return sendBody(request, reply, "asyncResult", {
        count: resultList.length,
        success,
        fail: resultList.length - success,
        resultList,
      });
    },
  );
}
