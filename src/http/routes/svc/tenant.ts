import { ENCRYPTION_ALGORITHM } from "../../../enrollment/tenantKeys.ts";
import type { AppInstance } from "../../types.ts";
import { partBErrors } from "../../schemas/common.ts";
import { EncryptionKey } from "../../schemas/enrollment.ts";
import { partBGuards, type PartBDeps } from "./guards.ts";

export function registerTenantRoutes(app: AppInstance, deps: PartBDeps): void {
  app.get(
    "/svc/v1/tenant/encryption-key",
    {
      onRequest: partBGuards(deps),
      schema: {
        tags: ["enrollment"],
        security: [{ apiToken: [] }],
        operationId: "getTenantEncryptionKey",
        summary: "The tenant's public key for encrypted fields (userPassword): RSA-OAEP with SHA-256",
        response: { 200: EncryptionKey, ...partBErrors(401, 403, 429, 500) },
      },
    },
    async (request) => ({
      algorithm: ENCRYPTION_ALGORITHM,
      format: "spki-der-base64" as const,
      publicKey: await deps.enrollment.tenantKeys.publicKey(request.partB!.tenant.tenantId),
    }),
  );
}
