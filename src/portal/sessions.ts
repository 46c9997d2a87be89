import type { AuditActor } from "../domain/audit.ts";
import type { ChangeActor } from "../services/auditTrail.ts";
import { createHash, timingSafeEqual } from "node:crypto";
import type { Clock, Rng } from "../clock.ts";
import type { PortalRole, PortalSession, PortalUser } from "../domain/portal.ts";
import type { PortalStore } from "../store/types.ts";

/** `__Host-`: the browser sends it only over HTTPS, only to this host, for every path; no Domain can widen it. */
export const SESSION_COOKIE = "__Host-attestd_session";

/** How long a session lives: --portal-idle-timeout and --portal-session-lifetime (src/config.ts), in ms. */
export interface SessionLifetimes {
  idleMs: number;
  absoluteMs: number;
}

/** Who is asking, as every portal route sees it. */
export interface Actor {
  userId: string;
  email: string;
  role: PortalRole;
  /** null for operators */
  tenantId: string | null;
}

/** See PortalSessions.touchIntervalMs: a 30-minute idle timeout is kept to within a minute. */
const TOUCH_INTERVAL_MAX_MS = 60_000;

export const sha256 = (s: string) => createHash("sha256").update(s).digest("base64url");

export function actorOf(u: PortalUser): Actor {
  return { userId: u.userId, email: u.email, role: u.role, tenantId: u.tenantId };
}

/**
 * Portal sessions kept in the durable store, so every instance of a scaled-out deployment knows them. The cookie
 * carries 32 random bytes; the store keeps only their SHA-256, so reading the store does not hand out sessions.
 * A session ends when signed out, after --portal-idle-timeout without a request (30 minutes), --portal-session-
 * lifetime after it began (12 hours), or at once when its user is disabled (resolve checks the user on every
 * request, so a role change applies at the next one too).
 */
export class PortalSessions {
  constructor(
    private readonly store: PortalStore,
    private readonly clock: Clock,
    private readonly rng: Rng,
    readonly lifetimes: SessionLifetimes,
  ) {}

  /**
   * A page view writes the session's last-seen time only when it is this old, so browsing costs reads, not a write
   * per request (on PostgreSQL, a write is a round trip and a WAL record). The price: idle expiry counts from a
   * touch at most this long before the last request, so a session may end up to this much earlier, never later.
   */
  get touchIntervalMs(): number {
    return Math.min(TOUCH_INTERVAL_MAX_MS, Math.floor(this.lifetimes.idleMs / 30));
  }

  /** Opens a session for a person who just proved who they are; `as` is the audit trail from where they signed in. */
  async open(user: PortalUser, method: PortalSession["method"], as: (actor: AuditActor) => ChangeActor): Promise<{ sessionId: string; session: PortalSession }> {
    const now = this.clock.nowMs();
    const sessionId = this.rng.bytes(32).toString("base64url");
    const session: PortalSession = {
      sessionHash: sha256(sessionId),
      userId: user.userId,
      csrfToken: this.rng.bytes(32).toString("base64url"),
      createdAtMs: now,
      lastSeenAtMs: now,
      expiresAtMs: now + this.lifetimes.absoluteMs,
      method,
    };
    await this.store.createSession(session);
    await as({ kind: "user", id: user.userId, email: user.email }).record({
      tenantId: user.tenantId,
      action: "portal.session.signed-in",
      target: { kind: "portal-user", id: user.userId },
      before: null,
      after: { method, expiresAt: new Date(session.expiresAtMs).toISOString() },
    });
    return { sessionId, session };
  }

  /** The live session and its user, touched; undefined (and the stale session removed) otherwise. */
  async resolve(sessionId: string | undefined): Promise<{ actor: Actor; session: PortalSession } | undefined> {
    if (!sessionId || sessionId.length > 128) return undefined;
    const hash = sha256(sessionId);
    const session = await this.store.getSession(hash);
    if (!session) return undefined;
    const now = this.clock.nowMs();
    const user = await this.store.getPortalUser(session.userId);
    if (now >= session.expiresAtMs || now - session.lastSeenAtMs >= this.lifetimes.idleMs || !user || user.state !== "active") {
      await this.store.deleteSession(hash);
      return undefined;
    }
    if (now - session.lastSeenAtMs >= this.touchIntervalMs) await this.store.touchSession(hash, now);
    return { actor: actorOf(user), session };
  }

  /** Signs out: the session ends on the server. `by` is the person signing out. */
  async end(sessionId: string, by: ChangeActor, tenantId: string | null): Promise<void> {
    await this.store.deleteSession(sha256(sessionId));
    await by.record({ tenantId, action: "portal.session.signed-out", target: { kind: "portal-user", id: by.actor.id }, before: null, after: null });
  }

  /** The token every state-changing request carries, compared in constant time. */
  csrfValid(session: PortalSession, token: string | undefined): boolean {
    if (typeof token !== "string") return false;
    const a = Buffer.from(session.csrfToken);
    const b = Buffer.from(token);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  purge(): Promise<number> {
    return this.store.purgeSessions(this.clock.nowMs(), this.lifetimes.idleMs);
  }
}
