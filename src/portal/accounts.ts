import type { AuditActor } from "../domain/audit.ts";
import type { ChangeActor } from "../services/auditTrail.ts";
import type { Clock, Rng } from "../clock.ts";
import type { PortalRole, PortalUser, TenantRole } from "../domain/portal.ts";
import { randomId } from "../enrollment/ids.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import type { RateLimitDecision, RateLimiter } from "../services/rateLimiter.ts";
import type { PortalStore, TenantStore } from "../store/types.ts";
import { PasswordHasher, passwordProblem } from "./passwords.ts";
import { sha256, type Actor } from "./sessions.ts";
import { unsafeCharIn, unsafeTextReason } from "../domain/text.ts";

/** A sign-in link (an invitation or a reset link) is good for a day, once. */
export const INVITE_TTL_MS = 24 * 3600_000;

export interface Invitation {
  user: PortalUser;
  /** shown once (in the link); only its SHA-256 is stored */
  token: string;
  /**
   * the one-time link: the public URL's /portal/invite#TOKEN, or /portal/reset#TOKEN for a reset link (the
   * fragment never reaches a server log); both set the password the same way
   */
  link: string;
  expiresAt: string;
}

/** A person named the way the caller knows them: the CLI by email, the admin API by id. */
export type PersonRef = { email: string } | { userId: string };

/** Whom to list: a tenant's people (by name), the operators, or (neither) everyone. */
export interface PeopleFilter {
  tenant?: string | undefined;
  operators?: boolean | undefined;
}

/** A person as the Users page and `attestd user list-portal` show them (never their password hash). */
export interface PersonSummary {
  userId: string;
  email: string;
  /** the tenant's name; null for operators */
  tenant: string | null;
  role: PortalRole;
  state: PortalUser["state"];
  createdAt: string;
  updatedAt: string;
}

/** The Retry-After header of a refused attempt, in whole seconds (at least 1). */
export function retryAfter(limit: RateLimitDecision): Record<string, string> {
  return { "Retry-After": String(Math.max(1, Math.ceil(limit.retryAfterMs / 1000))) };
}

/**
 * Portal accounts, for the CLI (`attestd user ...`) and the portal's operator pages alike: invitations, setting
 * a password through one, signing in, roles, disabling and enabling, listing. The two are views of these
 * operations and hold no logic of their own. Every refusal is a catalog error.
 */
export class PortalAccounts {
  constructor(
    private readonly store: PortalStore & Pick<TenantStore, "getTenantByName" | "listTenants">,
    private readonly clock: Clock,
    private readonly rng: Rng,
    private readonly limiter: RateLimiter,
    /** where people reach the portal (config.ts publicBaseUrl), for the links invitations carry */
    private readonly publicBaseUrl: string,
    private readonly passwords = new PasswordHasher(),
  ) {}

  private at(): string {
    return new Date(this.clock.nowMs()).toISOString();
  }

  /**
   * Makes (or finds) the user and issues a new one-time link. Inviting someone already invited or active again
   * issues a fresh link (a lost email, a forgotten password), and every earlier link of theirs stops working: a
   * person has one live link at most, so a link sent to an old address or seen by someone else dies with the next.
   */
  async invite(i: { email: string; tenant?: string; role: PortalRole }, by: ChangeActor): Promise<Invitation> {
    const unsafe = unsafeCharIn(i.email);
    if (unsafe) throw new AppError(catalog.PORTAL_INVALID_REQUEST, unsafeTextReason("an email address", unsafe));
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
    const before = user ?? null;
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
    const invitation = await this.issueLink(user, "invite");
    await by.record({ tenantId: user.tenantId, action: "portal.user.invited", target: { kind: "portal-user", id: user.userId }, before: before && personOf(before), after: personOf(user) });
    return invitation;
  }

  /**
   * A one-time link (24 h) where a person sets a new password, shown once to whoever asked for it: the CLI, an
   * operator for anyone, a tenant admin (`by`) for the people of their own tenant only (anyone else is not found).
   * Using it ends every session of the person; issuing it voids their earlier links but ends nothing yet.
   */
  async resetLink(ref: PersonRef, changedBy: ChangeActor, by?: Actor): Promise<Invitation> {
    const user = await this.find(ref);
    if (by && by.role !== "operator" && user.tenantId !== by.tenantId) throw new AppError(catalog.PORTAL_NOT_FOUND, `no portal user ${"email" in ref ? ref.email : ref.userId}`);
    const link = await this.issueLink(user, "reset");
    await changedBy.record({ tenantId: user.tenantId, action: "portal.user.reset-link-issued", target: { kind: "portal-user", id: user.userId }, before: null, after: { ...personOf(user), linkExpiresAt: link.expiresAt } });
    return link;
  }

  private async issueLink(user: PortalUser, page: "invite" | "reset"): Promise<Invitation> {
    const disabled = () => new AppError(catalog.PORTAL_INVALID_REQUEST, `${user.email} is disabled; enable it first`);
    if (user.state === "disabled") throw disabled();
    const token = this.rng.bytes(32).toString("base64url");
    const now = this.clock.nowMs();
    // false when the user was disabled between the read above and now: the store decides under its lock
    const made = await this.store.createInvite({ tokenHash: sha256(token), userId: user.userId, createdAtMs: now, expiresAtMs: now + INVITE_TTL_MS, usedAtMs: null });
    if (!made) throw disabled();
    return { user, token, link: `${this.publicBaseUrl}/portal/${page}#${token}`, expiresAt: new Date(now + INVITE_TTL_MS).toISOString() };
  }

  /**
   * Sets the password through a link (an invitation or a reset link) and activates the account; the link is spent
   * only if the password is accepted. Every other link of the person dies with it, and every session of theirs ends
   * (whoever held one signs in afresh, with the new password).
   */
  async acceptInvite(token: string, password: string, as: (actor: AuditActor) => ChangeActor): Promise<PortalUser> {
    const pending = await this.pendingInvitee(token);
    const problem = passwordProblem(password, pending.email);
    if (problem) throw new AppError(catalog.PORTAL_WEAK_PASSWORD, problem);
    const used = await this.store.useInvite(sha256(token), this.clock.nowMs());
    if (typeof used === "string") throw new AppError(catalog.PORTAL_INVITE_INVALID, used === "used" ? "the link is used, or a newer one replaced it" : `the link is ${used}`);
    const user = await this.store.getPortalUser(used.userId);
    if (!user || user.state === "disabled") throw new AppError(catalog.PORTAL_INVITE_INVALID, "the account is disabled");
    await this.setPassword(user, password);
    await as({ kind: "user", id: user.userId, email: user.email }).record({
      tenantId: user.tenantId,
      action: "portal.user.password-set",
      target: { kind: "portal-user", id: user.userId },
      before: personOf(user),
      after: { ...personOf(user), state: "active" },
    });
    return { ...user, state: "active" };
  }

  /**
   * The Account page's "change password": the current password proves it is the person (not whoever found their
   * unlocked screen), under the sign-in rate limits. Every session of theirs ends, this one too: the route opens a
   * fresh one for the browser that asked. Returns how many ended.
   */
  async changePassword(actor: Actor, current: string, next: string, remoteAddress: string, by: ChangeActor): Promise<number> {
    const limit = await this.limiter.forSignIn(sha256(actor.email), remoteAddress);
    if (!limit.allowed) throw new AppError(catalog.TOO_MANY_REQUESTS, "Too many password attempts; wait and try again", retryAfter(limit));
    const problem = passwordProblem(next, actor.email);
    if (problem) throw new AppError(catalog.PORTAL_WEAK_PASSWORD, problem);
    const user = await this.store.getPortalUser(actor.userId);
    const ok = user?.passwordHash ? await this.passwords.verify(current, user.passwordHash) : await this.passwords.verifyAgainstNothing(current);
    if (!ok || !user || user.state !== "active") throw new AppError(catalog.PORTAL_SIGNIN_FAILED, "the current password is incorrect");
    const ended = await this.setPassword(user, next);
    await by.record({ tenantId: user.tenantId, action: "portal.user.password-changed", target: { kind: "portal-user", id: user.userId }, before: personOf(user), after: { ...personOf(user), sessionsEnded: ended } });
    return ended;
  }

  /** The one way a password changes: hashed, stored, every outstanding link voided, every session ended. */
  private async setPassword(user: PortalUser, password: string): Promise<number> {
    const ended = await this.store.setPassword(user.userId, await this.passwords.hash(password), this.at(), this.clock.nowMs());
    if (ended === undefined) throw new AppError(catalog.PORTAL_INVITE_INVALID, "the account is disabled");
    return ended;
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
   * the same error after the same scrypt work; attempts are rate-limited per account and per address. A hash made
   * with older, weaker parameters is replaced by one of the current parameters on the way (the password is known
   * only now).
   */
  async signIn(email: string, password: string, remoteAddress: string): Promise<PortalUser> {
    const normalized = String(email).trim().toLowerCase();
    const limit = await this.limiter.forSignIn(sha256(normalized), remoteAddress);
    if (!limit.allowed) {
      throw new AppError(catalog.TOO_MANY_REQUESTS, "Too many sign-in attempts; wait and try again", retryAfter(limit));
    }
    const user = normalized.length <= 320 ? await this.store.getPortalUserByEmail(normalized) : undefined;
    const ok =
      user && user.passwordHash && typeof password === "string" && password.length <= 4096
        ? await this.passwords.verify(password, user.passwordHash)
        : await this.passwords.verifyAgainstNothing(String(password).slice(0, 4096));
    if (!ok || !user || user.state !== "active") {
      // a hash of older, cheaper parameters answers sooner than a current one: topped up with the current cost, a
      // wrong password for a person not yet upgraded takes no less time than one for an unknown email
      if (user?.passwordHash && this.passwords.needsRehash(user.passwordHash)) await this.passwords.verifyAgainstNothing("");
      throw new AppError(catalog.PORTAL_SIGNIN_FAILED, "Email or password incorrect");
    }
    if (this.passwords.needsRehash(user.passwordHash!)) {
      const upgraded = await this.passwords.hash(password);
      // only while the hash is still the one just verified: a password set meanwhile is never undone
      if (await this.store.replacePasswordHash(user.userId, user.passwordHash!, upgraded, this.at())) return { ...user, passwordHash: upgraded };
    }
    return user;
  }

  /** The person, or PORTAL_NOT_FOUND. */
  async find(ref: PersonRef): Promise<PortalUser> {
    const user = "email" in ref ? await this.store.getPortalUserByEmail(ref.email.trim().toLowerCase()) : await this.store.getPortalUser(ref.userId);
    if (!user) throw new AppError(catalog.PORTAL_NOT_FOUND, `no portal user ${"email" in ref ? ref.email : ref.userId}`);
    return user;
  }

  /**
   * Disables the person, voids every link of theirs and ends every session of theirs at once; returns how many
   * sessions ended. `by`, when the portal asks, is the operator doing it: nobody disables themselves (another
   * operator, or the CLI, can).
   */
  async disable(ref: PersonRef, changedBy: ChangeActor, by?: Actor): Promise<number> {
    const user = await this.find(ref);
    if (by && by.userId === user.userId) throw new AppError(catalog.PORTAL_INVALID_REQUEST, "you cannot disable your own account; another operator can");
    await this.store.updatePortalUser(user.userId, { state: "disabled" }, this.at());
    // after the state: a link being made concurrently either sees `disabled` (refused) or is voided here
    await this.store.voidInvites(user.userId, this.clock.nowMs());
    const ended = await this.store.deleteUserSessions(user.userId);
    await changedBy.record({ tenantId: user.tenantId, action: "portal.user.disabled", target: { kind: "portal-user", id: user.userId }, before: personOf(user), after: { ...personOf(user), state: "disabled", sessionsEnded: ended } });
    return ended;
  }

  /**
   * Lets a disabled person sign in again: active with the password they had, or invited if they never set one. No
   * link issued before the disable works again: one who never set a password needs a new invitation.
   */
  async enable(ref: PersonRef, by: ChangeActor): Promise<PortalUser> {
    const user = await this.find(ref);
    if (user.state !== "disabled") return user;
    const state = user.passwordHash ? "active" : "invited";
    await this.store.updatePortalUser(user.userId, { state }, this.at());
    await by.record({ tenantId: user.tenantId, action: "portal.user.enabled", target: { kind: "portal-user", id: user.userId }, before: personOf(user), after: { ...personOf(user), state } });
    return { ...user, state };
  }

  /** A tenant user's role, admin or viewer; it applies to their open sessions at their next request. */
  async setRole(ref: PersonRef, role: TenantRole, by: ChangeActor): Promise<PortalUser> {
    if (role !== "admin" && role !== "viewer") throw new AppError(catalog.PORTAL_INVALID_REQUEST, "a role is admin or viewer");
    const user = await this.find(ref);
    if (user.role === "operator") throw new AppError(catalog.PORTAL_INVALID_REQUEST, `${user.email} is an operator, who belongs to no tenant; roles are for tenant users`);
    if (user.role !== role) {
      await this.store.updatePortalUser(user.userId, { role }, this.at());
      await by.record({ tenantId: user.tenantId, action: "portal.user.role-changed", target: { kind: "portal-user", id: user.userId }, before: personOf(user), after: { ...personOf(user), role } });
    }
    return { ...user, role };
  }

  /** People by email: a tenant's, the operators, or everyone. */
  async list(filter: PeopleFilter = {}): Promise<PersonSummary[]> {
    let users: PortalUser[];
    if (filter.tenant !== undefined && filter.operators) throw new AppError(catalog.PORTAL_INVALID_REQUEST, "operators belong to no tenant: name a tenant or ask for operators");
    if (filter.operators) users = await this.store.listPortalUsers(null);
    else if (filter.tenant === undefined) users = await this.store.listPortalUsers();
    else {
      const tenant = await this.store.getTenantByName(filter.tenant);
      if (!tenant) throw new AppError(catalog.PORTAL_NOT_FOUND, `no tenant "${filter.tenant}"`);
      users = await this.store.listPortalUsers(tenant.tenantId);
    }
    const names = new Map((await this.store.listTenants()).map((t) => [t.tenantId, t.name]));
    return users.map((u) => summarisePerson(u, u.tenantId === null ? null : (names.get(u.tenantId) ?? u.tenantId)));
  }
}

export function summarisePerson(u: PortalUser, tenant: string | null): PersonSummary {
  return { userId: u.userId, email: u.email, tenant, role: u.role, state: u.state, createdAt: u.createdAt, updatedAt: u.updatedAt };
}

/** A person as the audit trail keeps them: never the password hash. */
function personOf(u: PortalUser): Omit<PortalUser, "passwordHash"> {
  const { passwordHash: _hash, ...rest } = u;
  return rest;
}
