import type { ChangeActor } from "../services/auditTrail.ts";
import type { Clock, Rng } from "../clock.ts";
import { catalog } from "../errors/catalog.ts";
import { AppError } from "../errors/AppError.ts";
import type {
  EnrollTransaction,
  NewTransaction,
  Page,
  Profile,
  ProfileFields,
  ProfileSettings,
  TransactionState,
  TransactionType,
} from "../domain/enrollment.ts";
import type { EnrollmentStore } from "../store/types.ts";
import { randomId } from "./ids.ts";
import { toWindow, type Paging } from "./paging.ts";
import { unsafeCharIn, unsafeTextReason } from "../domain/text.ts";

export const PROFILE_LIMITS = {
  name: 100,
  description: 1000,
  mdmUrl: 2048,
  settingsKeys: 50,
  settingKeyLength: 64,
  settingValueLength: 1024,
} as const;

export interface ProfileInput {
  name: string;
  description?: string | undefined;
  mdmUrl?: string | undefined;
  /** values are checked here (a route schema cannot type them without Ajv coercing them) */
  settings?: Record<string, unknown> | undefined;
}

export interface TransactionQuery extends Paging {
  type?: TransactionType | undefined;
  state?: TransactionState | undefined;
  profileId?: string | undefined;
}

const invalid = (reason: string) => new AppError(catalog.BULK_ENROLL_PROFILE_INVALID, reason);


/** The checks a schema cannot express (lengths and types are the route schema's). */
export function validateProfile(input: ProfileInput): ProfileFields {
  const unsafe = unsafeCharIn(input.name);
  if (unsafe) throw invalid(unsafeTextReason("a profile's name", unsafe));
  const name = input.name.trim();
  if (name.length === 0 || name.length > PROFILE_LIMITS.name) {
    throw invalid(`name must be 1-${PROFILE_LIMITS.name} printable characters`);
  }
  let mdmUrl: string | null = null;
  if (input.mdmUrl !== undefined && input.mdmUrl !== "") {
    let url: URL | undefined;
    try {
      url = new URL(input.mdmUrl);
    } catch {
      url = undefined;
    }
    if (!url || url.protocol !== "https:" || url.username || url.password) {
      throw invalid("mdmUrl must be an https URL without credentials");
    }
    mdmUrl = input.mdmUrl;
  }
  let settings: ProfileSettings | null = null;
  if (input.settings !== undefined) {
    const entries = Object.entries(input.settings);
    if (entries.length > PROFILE_LIMITS.settingsKeys) throw invalid(`settings may hold at most ${PROFILE_LIMITS.settingsKeys} keys`);
    for (const [k, v] of entries) {
      if (k.length === 0 || k.length > PROFILE_LIMITS.settingKeyLength || unsafeCharIn(k)) {
        throw invalid(`settings keys must be 1-${PROFILE_LIMITS.settingKeyLength} printable characters`);
      }
      if (typeof v === "number" ? !Number.isFinite(v) : typeof v === "string" ? v.length > PROFILE_LIMITS.settingValueLength : typeof v !== "boolean") {
        throw invalid(`settings.${k} must be a boolean, a finite number or a string of at most ${PROFILE_LIMITS.settingValueLength} characters`);
      }
    }
    settings = Object.fromEntries(entries) as ProfileSettings;
  }
  return { name, description: input.description ?? null, mdmUrl, settings };
}

/**
 * Bulk-enrollment profiles. Each create, update and delete commits together with its transaction record (state
 * Complete: the change is done when the response is sent), so the status listing never shows a change that did
 * not happen or misses one that did.
 */
export class ProfileService {
  constructor(
    private readonly store: EnrollmentStore,
    private readonly clock: Clock,
    private readonly rng: Rng,
  ) {}

  private newTransaction(tenantId: string): NewTransaction {
    return { transactionId: randomId(this.rng, "tx_"), tenantId, at: new Date(this.clock.nowMs()).toISOString() };
  }

  async create(tenantId: string, input: ProfileInput, by: ChangeActor): Promise<{ transactionId: string; profileId: string }> {
    const fields = validateProfile(input);
    const tx = this.newTransaction(tenantId);
    const profileId = randomId(this.rng, "pr_");
    const outcome = await this.store.createProfile({ profileId, tenantId, ...fields, createdAt: tx.at, updatedAt: tx.at }, tx);
    if (outcome === "name_conflict") {
      throw new AppError(catalog.BULK_ENROLL_PROFILE_NAME_CONFLICT, `A profile named "${fields.name}" already exists`);
    }
    await by.record({ tenantId, action: "profile.created", target: { kind: "profile", id: profileId }, before: null, after: { profileId, transactionId: tx.transactionId, ...fields } });
    return { transactionId: tx.transactionId, profileId };
  }

  async update(tenantId: string, profileId: string, input: ProfileInput, by: ChangeActor): Promise<{ transactionId: string; profileId: string }> {
    const fields = validateProfile(input);
    const tx = this.newTransaction(tenantId);
    const before = await this.store.getProfile(tenantId, profileId);
    const outcome = await this.store.updateProfile(tenantId, profileId, fields, tx);
    if (outcome === "not_found") throw notFound(profileId);
    if (outcome === "name_conflict") {
      throw new AppError(catalog.BULK_ENROLL_PROFILE_NAME_CONFLICT, `A profile named "${fields.name}" already exists`);
    }
    await by.record({ tenantId, action: "profile.updated", target: { kind: "profile", id: profileId }, before: before ?? null, after: { profileId, transactionId: tx.transactionId, ...fields } });
    return { transactionId: tx.transactionId, profileId };
  }

  async remove(tenantId: string, profileId: string, by: ChangeActor): Promise<{ transactionId: string; profileId: string }> {
    const tx = this.newTransaction(tenantId);
    const before = await this.store.getProfile(tenantId, profileId);
    if ((await this.store.deleteProfile(tenantId, profileId, tx)) === "not_found") throw notFound(profileId);
    await by.record({ tenantId, action: "profile.removed", target: { kind: "profile", id: profileId }, before: before ?? null, after: { transactionId: tx.transactionId } });
    return { transactionId: tx.transactionId, profileId };
  }

  async get(tenantId: string, profileId: string): Promise<Profile> {
    const p = await this.store.getProfile(tenantId, profileId);
    if (!p) throw notFound(profileId);
    return p;
  }

  list(tenantId: string, paging: Paging): Promise<Page<Profile>> {
    const w = toWindow(paging);
    return this.store.listProfiles(tenantId, w.offset, w.limit);
  }

  status(tenantId: string, q: TransactionQuery): Promise<Page<EnrollTransaction>> {
    return this.store.listTransactions({
      tenantId,
      ...toWindow(q),
      ...(q.type ? { type: q.type } : {}),
      ...(q.state ? { state: q.state } : {}),
      ...(q.profileId ? { profileId: q.profileId } : {}),
    });
  }
}

function notFound(profileId: string): AppError {
  return new AppError(catalog.PROFILE_NOT_FOUND, `No profile ${profileId.slice(0, 64)}`);
}
