import { Type } from "typebox";
import { partAErrors } from "../schemas/common.ts";
import type { AppDeps, AppInstance } from "../types.ts";
import { methodNotAllowed } from "./guards.ts";

const Jwk = Type.Object(
  {
    kty: Type.String(),
    kid: Type.String(),
    alg: Type.String(),
    use: Type.Literal("sig"),
    crv: Type.Optional(Type.String()),
    x: Type.Optional(Type.String()),
    y: Type.Optional(Type.String()),
    n: Type.Optional(Type.String()),
    e: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

/**
 * How long a relying party (or a proxy) may keep the key set: short beside the rotation grace period
 * (--ear-key-grace, at least 300 s), so a retired key is not trusted much past its retirement. A result whose kid
 * a cached set lacks is the sign to fetch it again (docs/results.md).
 */
const JWKS_MAX_AGE_SECONDS = 300;

/** GET /.well-known/jwks.json: the public keys of attestd's signed results. Public, like any JWKS. */
export function registerWellKnownRoutes(app: AppInstance, deps: AppDeps): void {
  methodNotAllowed(app, "/.well-known/jwks.json", ["GET"]);
  app.get(
    "/.well-known/jwks.json",
    {
      schema: {
        tags: ["results"],
        operationId: "getResultKeys",
        summary: "The public keys that verify attestd's signed results (EARs), by kid",
        response: {
          200: Type.Object({ keys: Type.Array(Jwk) }),
          ...partAErrors(405, 500),
        },
      },
    },
    async (_request, reply) => {
      reply.header("Cache-Control", `public, max-age=${JWKS_MAX_AGE_SECONDS}`);
      return reply.type("application/jwk-set+json").send(deps.results.jwks());
    },
  );
}
