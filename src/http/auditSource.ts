import type { FastifyRequest } from "fastify";
import type { AuditSource } from "../domain/audit.ts";

/** Where an HTTP request came from, for the audit trail: its remote address (after --trusted-proxies) and user agent. */
export function requestSource(request: FastifyRequest): AuditSource {
  const ua = request.headers["user-agent"];
  return { kind: "http", remoteAddress: request.ip, userAgent: typeof ua === "string" ? ua.slice(0, 512) : null };
}
