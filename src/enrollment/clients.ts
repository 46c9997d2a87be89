import type { ChangeActor } from "../services/auditTrail.ts";
import { generateKeyPair } from "node:crypto";
import { promisify } from "node:util";
import type { Clock, Rng } from "../clock.ts";
import type { ApiClient, EnrollmentUser } from "../domain/enrollment.ts";
import type { EnrollmentStore } from "../store/types.ts";
import type { Tenant } from "../domain/tenants.ts";
import type { ClientKeys } from "./clientJwt.ts";
import { CLIENT_ID_PREFIX, newSecretToken, randomId } from "./ids.ts";
import { unsafeCharIn, unsafeTextReason } from "../domain/text.ts";

const generateRsa = promisify(generateKeyPair);

export const DEFAULT_CLIENT_RPS = 10;
export const DEFAULT_CLIENT_BURST = 20;
const EMAIL_RE = /^[^\s@]{1,64}@[^\s@]{1,189}$/;

/** A refusal the operator can act on (the CLI prints it as one line). */
export class ClientAdminError extends Error {}

export interface NewClientOptions {
  email: string;
  readOnly?: boolean;
  rps?: number;
  burst?: number;
}

/** What `attestd client create` shows: no secret, no key. */
export type ClientSummary = Omit<ApiClient, "identifierHash" | "publicKey">;

export function summarise(c: ApiClient): ClientSummary {
  const { identifierHash: _h, publicKey: _k, ...rest } = c;
  return rest;
}

/** Whether a client can authenticate now, as far as the client itself and its user go (the tenant's standing aside). */
export type ClientState = "active" | "revoked" | "user-deregistered";

/** A client as `attestd client list` and the portal show it: the summary, its user's email and its state. */
export interface ClientView extends ClientSummary {
  email: string;
  state: ClientState;
}

/**
 * Operator-side management of users and API clients. A client's private key and identifier exist only in the
 * keys.json handed out at creation; the store keeps the public key and the identifier's hash.
 */
export class ClientAdmin {
  constructor(
    private readonly store: EnrollmentStore,
    private readonly clock: Clock,
    private readonly rng: Rng,
  ) {}

  private now(): string {
    return new Date(this.clock.nowMs()).toISOString();
  }

  async registerUser(tenant: Tenant, email: string, by: ChangeActor): Promise<EnrollmentUser> {
    const unsafe = unsafeCharIn(email);
    if (unsafe) throw new ClientAdminError(unsafeTextReason("a user's email address", unsafe));
    if (!EMAIL_RE.test(email)) throw new ClientAdminError(`"${email}" is not an email address`);
    const before = await this.store.getUserByEmail(tenant.tenantId, email);
    const user = await this.store.registerUser({ userId: randomId(this.rng, "us_"), tenantId: tenant.tenantId, email, at: this.now() });
    await by.record({ tenantId: tenant.tenantId, action: "enrollment-user.registered", target: { kind: "enrollment-user", id: user.userId }, before: before ?? null, after: user });
    return user;
  }

  async deregisterUser(tenant: Tenant, email: string, by: ChangeActor): Promise<void> {
    const before = await this.store.getUserByEmail(tenant.tenantId, email);
    if (!(await this.store.setUserState(tenant.tenantId, email, "deregistered", this.now()))) {
      throw new ClientAdminError(`tenant ${tenant.name} has no user ${email}`);
    }
    const after = await this.store.getUserByEmail(tenant.tenantId, email);
    await by.record({ tenantId: tenant.tenantId, action: "enrollment-user.deregistered", target: { kind: "enrollment-user", id: after?.userId ?? email }, before: before ?? null, after: after ?? null });
  }

  /**
   * Creates a client for the user (registering a new user; a deregistered one is refused, since its clients could
   * not authenticate). Returns keys.json's content, to be written once.
   */
  async createClient(tenant: Tenant, o: NewClientOptions, by: ChangeActor): Promise<{ client: ApiClient; keys: ClientKeys }> {
    const rps = o.rps ?? DEFAULT_CLIENT_RPS;
    const burst = o.burst ?? (o.rps === undefined ? DEFAULT_CLIENT_BURST : Math.max(1, Math.ceil(rps * 2)));
    if (!(rps > 0) || !Number.isFinite(rps)) throw new ClientAdminError("rps must be a positive number");
    if (!Number.isInteger(burst) || burst < 1) throw new ClientAdminError("burst must be a positive integer");
    const existing = await this.store.getUserByEmail(tenant.tenantId, o.email);
    if (existing?.state === "deregistered") {
      throw new ClientAdminError(`user ${o.email} is deregistered; register it again first (attestd user register)`);
    }
    const user = existing ?? (await this.registerUser(tenant, o.email, by));

    const { publicKey, privateKey } = await generateRsa("rsa", {
      modulusLength: 2048,
      publicKeyEncoding: { type: "spki", format: "der" },
      privateKeyEncoding: { type: "pkcs8", format: "der" },
    });
    const identifier = newSecretToken(this.rng, CLIENT_ID_PREFIX);
    const client: ApiClient = {
      revokedAt: null,
      clientId: identifier.id,
      tenantId: tenant.tenantId,
      userId: user.userId,
      publicKey: publicKey.toString("base64"),
      identifierHash: identifier.hash,
      readOnly: o.readOnly ?? false,
      rps,
      burst,
      restrictions: null,
      createdAt: this.now(),
    };
    await this.store.createClient(client);
    await by.record({ tenantId: tenant.tenantId, action: "client.created", target: { kind: "api-client", id: client.clientId }, before: null, after: { ...summarise(client), email: o.email } });
    return {
      client,
      keys: { Public: client.publicKey, Private: privateKey.toString("base64"), Identifier: identifier.token },
    };
  }

  /** The tenant's clients, oldest first, revoked ones included (marked). */
  async list(tenant: Tenant): Promise<ClientView[]> {
    const users = new Map((await this.store.listUsers(tenant.tenantId)).map((u) => [u.userId, u]));
    return (await this.store.listClients(tenant.tenantId)).map((c) => {
      const user = users.get(c.userId);
      const state: ClientState = c.revokedAt !== null ? "revoked" : user?.state === "registered" ? "active" : "user-deregistered";
      return { ...summarise(c), email: user?.email ?? "", state };
    });
  }

  /** The client if `tenant` (undefined: the operator, any tenant) has it; another tenant's is not found either. */
  private async owned(tenant: Tenant | undefined, clientId: string): Promise<ApiClient | undefined> {
    const c = await this.store.getClient(clientId);
    return c && (!tenant || c.tenantId === tenant.tenantId) ? c : undefined;
  }

  /**
   * Revokes a client: its access tokens stop working at once and it can get no new ones; the record stays, marked.
   * False when the tenant has no active client of that id.
   */
  async revoke(tenant: Tenant | undefined, clientId: string, by: ChangeActor): Promise<boolean> {
    const before = await this.owned(tenant, clientId);
    if (!before) return false;
    const revoked = await this.store.revokeClient(clientId, this.now());
    if (revoked) {
      const after = await this.store.getClient(clientId);
      await by.record({ tenantId: before.tenantId, action: "client.revoked", target: { kind: "api-client", id: clientId }, before: summarise(before), after: after ? summarise(after) : null });
    }
    return revoked;
  }

  /** A read-only client may only read (GET); applies from its next request. False when the tenant has no such client. */
  async setReadOnly(tenant: Tenant | undefined, clientId: string, readOnly: boolean, by: ChangeActor): Promise<boolean> {
    const c = await this.owned(tenant, clientId);
    if (!c || c.revokedAt !== null) return false;
    const changed = await this.store.setClientReadOnly(clientId, readOnly);
    if (changed && c.readOnly !== readOnly) {
      await by.record({ tenantId: c.tenantId, action: readOnly ? "client.made-read-only" : "client.made-read-write", target: { kind: "api-client", id: clientId }, before: summarise(c), after: { ...summarise(c), readOnly } });
    }
    return changed;
  }
}
