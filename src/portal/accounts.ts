import type { Clock, Rng } from "../clock.ts";
import type { PortalRole, PortalUser } from "../domain/portal.ts";
import { randomId } from "../enrollment/ids.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import type { RateLimiter } from "../services/rateLimiter.ts";
import type { PortalStore, TenantStore } from "../store/types.ts";
import { hashPassword, passwordProblem, verifyAgainstNothing, verifyPassword } from "./passwords.ts";
import { sha256 } from "./sessions.ts";

/** A sign-in link is good for a day, once. */
export const INVITE_TTL_MS = 24 * 3600_000;

export interface Invitation {
  user: PortalUser;
  /** shown once (in the link); only its SHA-256 is stored */
  token: string;
  expiresAt: string;
}

/**
 * Portal accounts, for the CLI (`attestd user ...`) and the portal's operator pages alike: invitations, setting
 * a password through one, signing in, roles, disabling. Every refusal is a catalog error.
 */
export class PortalAccounts {
  constructor(
    private readonly store: PortalStore & Pick<TenantStore, "getTenantByName">,
    private readonly clock: Clock,
    private readonly rng: Rng,
    private readonly limiter: RateLimiter,
  ) {}

  private at(): string {
    return new Date(this.clock.nowMs()).toISOString();
  }

  /**
   * Makes (or finds) the user and issues a new one-time link. Inviting someone already invited or active again
   * issues a fresh link (a lost email, a forgotten password); an earlier link still works until used or expired.
   */
  async invite(i: { email: string; tenant?: string; role: PortalRole }): Promise<Invitation> {
    const email = i.email.trim().toLowerCase();
    if (!/^[^\s@]{1,64}@[^\s@]{1,255}$/.test(email)) throw new AppError(catalog.PORTAL_INVALID_REQUEST, `"${i.email}" is not an email address`);
    if ((i.role === "operator") !== (i.tenant === undefined)) {
      throw new AppError(catalog.PORTAL_INVALID_REQUEST, "operators belong to no tenant; admins and viewers to exactly one");
    }
    let tenantId: string | null = null;
    if (i.tenant !== undefined) {
      const tenant = await this.store.getTenantByName(i.tenant);
      if (!tenant) throw new AppError(catalog.PORTAL_NOT_FOUND, `no tenant "${i.tenant}"`);
      tenantId = tenant.tenantId;
    }
    let user = await this.store.getPortalUserByEmail(email);
    if (user) {
      if (user.tenantId !== tenantId) throw new AppError(catalog.PORTAL_EMAIL_TAKEN, `${email} is a portal user of another tenant`);
      if (user.state === "disabled") throw new AppError(catalog.PORTAL_INVALID_REQUEST, `${email} is disabled; enable it first`);
      if (user.role !== i.role) {
        await this.store.updatePortalUser(user.userId, { role: i.role }, this.at());
        user = { ...user, role: i.role };
      }
    } else {
      const made = await this.store.createPortalUser({ userId: randomId(this.rng, "u_"), email, tenantId, role: i.role, at: this.at() });
      if (made.outcome === "email_taken") throw new AppError(catalog.PORTAL_EMAIL_TAKEN, `${email} is already a portal user`);
      user = made.user;
    }
    const token = this.rng.bytes(32).toString("base64url");
    const now = this.clock.nowMs();
    await this.store.createInvite({ tokenHash: sha256(token), userId: user.userId, createdAtMs: now, expiresAtMs: now + INVITE_TTL_MS, usedAtMs: null });
    return { user, token, expiresAt: new Date(now + INVITE_TTL_MS).toISOString() };
  }

  /** Sets the password through a link and activates the account; the link is spent only if the password is accepted. */
  async acceptInvite(token: string, password: string): Promise<PortalUser> {
    const pending = await this.pendingInvitee(token);
    const problem = passwordProblem(password, pending.email);
    if (problem) throw new AppError(catalog.PORTAL_WEAK_PASSWORD, problem);
    const used = await this.store.useInvite(sha256(token), this.clock.nowMs());
    if (typeof used === "string") throw new AppError(catalog.PORTAL_INVITE_INVALID, `the link is ${used}`);
    const user = await this.store.getPortalUser(used.userId);
    if (!user || user.state === "disabled") throw new AppError(catalog.PORTAL_INVITE_INVALID, "the account is disabled");
    await this.store.updatePortalUser(user.userId, { passwordHash: await hashPassword(password), state: "active" }, this.at());
    return { ...user, state: "active" };
  }

  /** Who a usable link is for, without spending it (the page greets the person; the password is checked against the email). */
  async pendingInvitee(token: string): Promise<PortalUser> {
    if (typeof token !== "string" || token.length === 0 || token.length > 128) throw new AppError(catalog.PORTAL_INVITE_INVALID);
    const userId = await this.store.peekInvite(sha256(token), this.clock.nowMs());
    const user = userId ? await this.store.getPortalUser(userId) : undefined;
    if (!user || user.state === "disabled") throw new AppError(catalog.PORTAL_INVITE_INVALID);
    return user;
  }

  /**
   * Email and password → the user. An unknown email, a wrong password, a user not yet active or disabled all get
   * the same error after the same scrypt work; attempts are rate-limited per account and per address.
   */
  async signIn(email: string, password: string, remoteAddress: string): Promise<PortalUser> {
    const normalized = String(email).trim().toLowerCase();
    const limit = await this.limiter.forSignIn(sha256(normalized), remoteAddress);
    if (!limit.allowed) {
      throw new AppError(catalog.TOO_MANY_REQUESTS, "Too many sign-in attempts; wait and try again", {
        "Retry-After": String(Math.max(1, Math.ceil(limit.retryAfterMs / 1000))),
      });
    }
    const user = normalized.length <= 320 ? await this.store.getPortalUserByEmail(normalized) : undefined;
    const ok =
      user && user.passwordHash && typeof password === "string" && password.length <= 4096
        ? await verifyPassword(password, user.passwordHash)
        : await verifyAgainstNothing(String(password).slice(0, 4096));
    if (!ok || !user || user.state !== "active") throw new AppError(catalog.PORTAL_SIGNIN_FAILED, "Email or password incorrect");
    return user;
  }

  /** Disables the person and ends every session of theirs at once; returns how many ended. */
  async disable(email: string): Promise<number> {
    const user = await this.store.getPortalUserByEmail(email.trim().toLowerCase());
    if (!user) throw new AppError(catalog.PORTAL_NOT_FOUND, `no portal user ${email}`);
    await this.store.updatePortalUser(user.userId, { state: "disabled" }, this.at());
    return this.store.deleteUserSessions(user.userId);
  }

  async list(tenantName?: string | null): Promise<PortalUser[]> {
    if (tenantName === undefined || tenantName === null) return this.store.listPortalUsers(tenantName);
    const tenant = await this.store.getTenantByName(tenantName);
    if (!tenant) throw new AppError(catalog.PORTAL_NOT_FOUND, `no tenant "${tenantName}"`);
    return this.store.listPortalUsers(tenant.tenantId);
  }
}
