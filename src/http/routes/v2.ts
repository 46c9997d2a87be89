import { Type } from "typebox";
import { catalog } from "../../errors/catalog.ts";
import { AppError } from "../../errors/AppError.ts";
import { NONCE_PATTERN } from "../../nonces/nonce.ts";
import { sendBody, sendEar } from "../render.ts";
import { DeviceIdSchema, jsonOrEar, partAErrors, verdictRecordRef } from "../schemas/common.ts";
import type { AppDeps, AppInstance } from "../types.ts";
import { methodNotAllowed, partAGuards } from "./guards.ts";
import type { FastifyRequest } from "fastify";

const OCTET = "application/octet-stream";

/** POST /v2/nonces and POST /v2/blobs, with the checks in attestation-api.md's order. */
export function registerV2Routes(app: AppInstance, deps: AppDeps): void {
  const guard = partAGuards(deps);

  methodNotAllowed(app, "/v2/nonces", ["POST"]);
  // A body is accepted and ignored, whatever it is (attestation-api.md): in a scope of its own the route reads any
  // body as bytes, so `Content-Type: application/json` with an empty or unparsable body (what many client libraries
  // send) is no error. bodyLimit bounds what is read of it.
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer" }, (_request, _body, done) => done(null, undefined));
    registerNonceRoute(scope, deps);
  });

  // The body check runs in onRequest, before Fastify reads the body, so a wrong type or an oversized
  // Content-Length is refused without buffering anything (415 and 422 precede the nonce checks).
  const contentChecks = async (request: FastifyRequest) => {
    const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== OCTET) throw new AppError(catalog.UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/octet-stream");
    const declared = Number(request.headers["content-length"] ?? NaN);
    if (declared > deps.limits.maxBlobBytes) {
      throw new AppError(catalog.BLOB_TOO_LARGE, `The blob exceeds ${deps.limits.maxBlobBytes} bytes`);
    }
  };

  methodNotAllowed(app, "/v2/blobs", ["POST"]);
  app.post(
    "/v2/blobs",
    {
      onRequest: [guard, contentChecks],
      bodyLimit: deps.limits.maxBlobBytes,
      config: {
        tooLargeEntry: catalog.BLOB_TOO_LARGE,
        invalidEntry: catalog.NONCE_INVALID,
        // refused before the nonce is looked at, so a malformed name spends no nonce
        fieldEntries: { deviceId: catalog.INVALID_REQUEST },
        offersEar: true,
      },
      schema: {
        tags: ["attestation"],
        operationId: "appraiseBlob",
        summary: "Appraise a blob against a nonce; with deviceId, also against that device's pin",
        description: "Answers the verdict record, or with `Accept: application/eat+jwt` its signed result (EAR) alone.",
        security: [{ apiKey: [] }],
        querystring: Type.Object({ nonce: Type.Optional(Type.String()), deviceId: Type.Optional(DeviceIdSchema) }),
        response: {
          200: jsonOrEar(verdictRecordRef, "The verdict record (JSON or XML), or its EAR"),
          ...partAErrors(400, 401, 403, 405, 406, 415, 422, 429, 500, 501),
        },
      },
    },
    async (request, reply) => {
      const blob = (request.body as Buffer | undefined) ?? Buffer.alloc(0);
      const stored = await deps.attestation.submitBlob(request.principal!.tenant, request.query.nonce, blob, {
        deviceId: request.query.deviceId,
      });
      reply.header("Location", `/api/v1/verdicts/${stored.objectId}`);
      if (request.mediaFormat === "ear") return sendEar(reply, await deps.results.ear(stored));
      return sendBody(request, reply, "verdictRecord", { ...stored.record });
    },
  );
}

/** POST /v2/nonces, registered in the scope above */
function registerNonceRoute(app: AppInstance, deps: AppDeps): void {
  app.post(
    "/v2/nonces",
    {
      onRequest: partAGuards(deps),
      bodyLimit: 4096,
      schema: {
        tags: ["attestation"],
        operationId: "issueNonce",
        summary: "Issue a single-use nonce",
        security: [{ apiKey: [] }],
        response: {
          200: Type.Object({ nonce: Type.String({ pattern: NONCE_PATTERN }) }),
          ...partAErrors(400, 401, 403, 405, 406, 422, 429, 500),
        },
      },
    },
    async (request, reply) => {
      const nonce = await deps.attestation.issueNonce(request.principal!.tenant.tenantId);
      return sendBody(request, reply, "nonceResponse", { nonce });
    },
  );
}
