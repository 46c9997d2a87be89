import type { Clock } from "../clock.ts";
import type { TenantPolicyDocument, TenantPolicyVersion } from "../domain/tenantPolicy.ts";
import type { Tenant } from "../domain/tenants.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import { androidSectionOf, parseTenantPolicy, policyProblemsText, type PolicyProblem } from "../attestation/policy/tenantPolicyDocument.ts";
import type { AndroidPolicies } from "../trust/androidPolicyFile.ts";
import type { TenantPolicyStore, TenantStore } from "../store/types.ts";
import type { AuditActor } from "../domain/audit.ts";
import type { ChangeActor } from "./auditTrail.ts";
import { TenantReadCache } from "./tenantReadCache.ts";

/**
 * How long an instance may appraise with a tenant's policy after another instance (or the CLI) stored a newer
 * version: the bound docs/policy.md states. The instance that stored it applies it from its answer on.
 */
export const POLICY_CACHE_MS = 5_000;

/** The author of the versions written from `--android-policy` at start-up. */
export const SEED_AUTHOR = "seed:--android-policy";

export const MAX_VERSIONS_PAGE = 100;

/** How often a write retries when another writer took its version number meanwhile. */
const APPEND_ATTEMPTS = 5;

/** 400 PORTAL_POLICY_INVALID, its reason naming every faulty field; `problems` for the portal to show beside them. */
export class PolicyInvalidError extends AppError {
  constructor(readonly problems: readonly PolicyProblem[]) {
    super(catalog.PORTAL_POLICY_INVALID, policyProblemsText(problems));
  }
}

/** The document, or 400 PORTAL_POLICY_INVALID naming each faulty field. */
export function checkPolicyDocument(value: unknown): TenantPolicyDocument {
  const parsed = parseTenantPolicy(value);
  if (!parsed.ok) throw new PolicyInvalidError(parsed.problems);
  return parsed.document;
}

/**
 * A tenant's appraisal policy (issue 26, docs/policy.md), one service behind the admin API, `attestd policy ...` and
 * the portal's Policy page, and the attestation service's read of it. Every change is a new immutable version;
 * the highest is in force; a rollback is a new version with an old document.
 */
export class TenantPolicies {
  private readonly cache: TenantReadCache<TenantPolicyVersion | undefined>;

  constructor(
    private readonly store: TenantPolicyStore & Pick<TenantStore, "listTenants">,
    private readonly clock: Clock,
    cacheMs = POLICY_CACHE_MS,
  ) {
    this.cache = new TenantReadCache(clock, cacheMs);
  }

  /** The version in force for the appraisal: read at most every POLICY_CACHE_MS per tenant. */
  forAppraisal(tenantId: string): Promise<TenantPolicyVersion | undefined> {
    return this.cache.get(tenantId, () => this.store.currentTenantPolicy(tenantId));
  }

  /** The version in force now, read from the store. */
  current(tenant: Pick<Tenant, "tenantId">): Promise<TenantPolicyVersion | undefined> {
    return this.store.currentTenantPolicy(tenant.tenantId);
  }

  /** One version; 404 PORTAL_NOT_FOUND when the tenant has none of that number. */
  async version(tenant: Pick<Tenant, "tenantId">, version: number): Promise<TenantPolicyVersion> {
    const v = await this.store.getTenantPolicyVersion(tenant.tenantId, version);
    if (!v) throw new AppError(catalog.PORTAL_NOT_FOUND, `the tenant has no policy version ${version}`);
    return v;
  }

  /** The tenant's versions, newest first (below `before` when given). */
  versions(tenant: Pick<Tenant, "tenantId">, q: { before?: number | undefined; limit?: number | undefined } = {}): Promise<TenantPolicyVersion[]> {
    return this.store.listTenantPolicyVersions(tenant.tenantId, { before: q.before, limit: Math.min(q.limit ?? MAX_VERSIONS_PAGE, MAX_VERSIONS_PAGE) });
  }

  /** Validates `document` (400 PORTAL_POLICY_INVALID naming each faulty field) and stores it as the next version. */
  async set(tenant: Pick<Tenant, "tenantId">, document: unknown, by: ChangeActor): Promise<TenantPolicyVersion> {
    return this.appendBy(tenant.tenantId, checkPolicyDocument(document), by, "policy.changed");
  }

  /** A new version with the document of `version` (404 PORTAL_NOT_FOUND when there is none). */
  async rollback(tenant: Pick<Tenant, "tenantId">, version: number, by: ChangeActor): Promise<TenantPolicyVersion> {
    const old = await this.version(tenant, version);
    return this.appendBy(tenant.tenantId, old.document, by, "policy.rolled-back");
  }

  /** a version stored by a person or an operator, recorded in the audit trail with the version it replaced */
  private async appendBy(tenantId: string, document: TenantPolicyDocument, by: ChangeActor, action: string): Promise<TenantPolicyVersion> {
    const before = await this.store.currentTenantPolicy(tenantId);
    const v = await this.append(tenantId, document, policyAuthor(by.actor));
    await by.record({ tenantId, action, target: { kind: "policy", id: tenantId }, before: before ?? null, after: v });
    return v;
  }

  /**
   * At start-up: each tenant that `--android-policy` names and that has no stored policy gets version 1 with the
   * file's section as its android section. A tenant with a stored policy keeps it: the store wins. Instances
   * starting together write it once (the second's append is a conflict, and the first's version stands).
   * Answers the names of the tenants seeded.
   */
  async seedFromFile(policies: AndroidPolicies): Promise<string[]> {
    if (policies.tenants.size === 0) return [];
    const seeded: string[] = [];
    for (const t of await this.store.listTenants()) {
      const own = policies.tenants.get(t.name);
      if (!own || (await this.store.currentTenantPolicy(t.tenantId))) continue;
      const outcome = await this.store.appendTenantPolicy({
        tenantId: t.tenantId,
        version: 1,
        createdAt: new Date(this.clock.nowMs()).toISOString(),
        author: SEED_AUTHOR,
        document: { android: androidSectionOf(own) },
      });
      if (outcome === "ok") seeded.push(t.name);
    }
    return seeded;
  }

  private async append(tenantId: string, document: TenantPolicyDocument, author: string): Promise<TenantPolicyVersion> {
    try {
      for (let attempt = 0; attempt < APPEND_ATTEMPTS; attempt++) {
        const top = await this.store.currentTenantPolicy(tenantId);
        const v: TenantPolicyVersion = { tenantId, version: (top?.version ?? 0) + 1, createdAt: new Date(this.clock.nowMs()).toISOString(), author, document };
        if ((await this.store.appendTenantPolicy(v)) === "ok") return v;
      }
      throw new Error(`tenant policy: ${APPEND_ATTEMPTS} concurrent writers took every version number tried`);
    } finally {
      // also after a failure: the store may hold a version this process has not seen
      this.cache.forget(tenantId);
    }
  }
}

/** a version's author as docs/policy.md names it: a portal user's email, `operator:<OS user>` at the CLI */
export function policyAuthor(actor: AuditActor): string {
  if (actor.kind === "user") return actor.email;
  return `${actor.kind}:${actor.id}`;
}
