import type { ChangeActor } from "../services/auditTrail.ts";
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { Clock, Rng } from "../clock.ts";
import { catalog } from "../errors/catalog.ts";
import { AppError } from "../errors/AppError.ts";
import type { DevicePage } from "../domain/enrollment.ts";
import type { EnrollmentStore, NewJobItem, TenantStore } from "../store/types.ts";
import type { Tenant } from "../domain/tenants.ts";
import { isValidDeviceId } from "./deviceIds.ts";
import { randomId } from "./ids.ts";
import { toWindow, type Paging } from "./paging.ts";
import type { TenantKeyService } from "./tenantKeys.ts";

export interface DeviceUpload {
  customerId?: string | undefined;
  profileId: string;
  devices: { deviceId: string; userId?: string | undefined; userPassword?: string | undefined }[];
}

export interface DeviceQuery extends Paging {
  transactionId?: string | undefined;
  profileId?: string | undefined;
}

/** how many offending ids an error's data names (the rest are summarised) */
const LISTED_IDS = 10;

function listIds(ids: readonly string[]): string {
  const shown = ids.slice(0, LISTED_IDS).join(", ");
  return ids.length > LISTED_IDS ? `${shown} and ${ids.length - LISTED_IDS} more` : shown;
}

/**
 * Where a request names a customerId, it must be the caller's own tenant: not digits → CUSTOMER_ID_INVALID,
 * nobody's → TENANT_NOT_FOUND, another tenant's → TENANT_MISMATCH.
 */
export async function checkCustomerId(tenants: TenantStore, caller: Tenant, customerId: string | undefined): Promise<void> {
  if (customerId === undefined) return;
  if (!/^\d{1,20}$/.test(customerId)) throw new AppError(catalog.CUSTOMER_ID_INVALID, "customerId must be 1-20 digits");
  if (customerId === caller.customerId) return;
  if (!(await tenants.getTenantByCustomerId(customerId))) {
    throw new AppError(catalog.TENANT_NOT_FOUND, `No tenant has customer ID ${customerId}`);
  }
  throw new AppError(catalog.TENANT_MISMATCH, "The customer ID is not the current tenant's");
}

/**
 * Device upload, listing and profile (un)assignment. An upload is checked completely before anything is stored,
 * then queued for the job worker in one store transaction; the caller gets the transaction id at once.
 */
export class DeviceService {
  constructor(
    private readonly tenants: TenantStore,
    private readonly store: EnrollmentStore,
    private readonly tenantKeys: TenantKeyService,
    private readonly clock: Clock,
    private readonly rng: Rng,
    readonly maxDevices: number,
  ) {}

  /** The count checks the route runs before schema validation (so they answer with their own codes). */
  checkCount(count: number): void {
    if (count === 0) throw new AppError(catalog.RESOURCE_INVALID_PARAM, "Device ID list cannot be empty");
    if (count > this.maxDevices) {
      throw new AppError(catalog.TOO_MANY_DEVICES, `At most ${this.maxDevices} devices per request`);
    }
  }

  async upload(tenant: Tenant, req: DeviceUpload, by: ChangeActor): Promise<{ transactionId: string }> {
    this.checkCount(req.devices.length);
    await checkCustomerId(this.tenants, tenant, req.customerId);

    const bad = req.devices.filter((d) => !isValidDeviceId(d.deviceId)).map((d) => d.deviceId.slice(0, 64));
    if (bad.length > 0) {
      throw new AppError(
        catalog.BULK_ENROLL_DEVICE_INVALID,
        `Not an IMEI (15 digits, Luhn) or serial number ([A-Z0-9]{8,20}): ${listIds(bad)}`,
      );
    }
    const seen = new Set<string>();
    for (const d of req.devices) {
      if (seen.has(d.deviceId)) throw new AppError(catalog.BULK_ENROLL_REQUEST_INVALID, `Device ${d.deviceId} is listed twice`);
      seen.add(d.deviceId);
      if (d.userPassword !== undefined && d.userId === undefined) {
        throw new AppError(catalog.BULK_ENROLL_REQUEST_INVALID, `Device ${d.deviceId} has a userPassword but no userId`);
      }
    }

    if (!(await this.store.getProfile(tenant.tenantId, req.profileId))) throw profileNotFound(req.profileId);

    const userIds = new Map<string, string>();
    const unknown: string[] = [];
    for (const email of new Set(req.devices.flatMap((d) => (d.userId === undefined ? [] : [d.userId])))) {
      const u = await this.store.getUserByEmail(tenant.tenantId, email);
      if (u && u.state === "registered") userIds.set(email, u.userId);
      else unknown.push(email);
    }
    if (unknown.length > 0) throw new AppError(catalog.USER_NOT_FOUND, `No registered user ${listIds(unknown)}`);

    const items: NewJobItem[] = [];
    let decrypted = 0;
    for (const d of req.devices) {
      // decrypted only to prove it is readable; the queue keeps the client's ciphertext, never the plaintext
      if (d.userPassword !== undefined) {
        await this.tenantKeys.decrypt(tenant.tenantId, d.userPassword, "userPassword");
        // RSA decryption is synchronous CPU work: yield now and then so a full list cannot stall other requests
        if (++decrypted % 25 === 0) await yieldToEventLoop();
      }
      items.push({
        deviceId: d.deviceId,
        userId: d.userId === undefined ? null : userIds.get(d.userId)!,
        userPassword: d.userPassword ?? null,
      });
    }

    const transactionId = randomId(this.rng, "tx_");
    const at = new Date(this.clock.nowMs()).toISOString();
    const outcome = await this.store.enqueueDevices(
      { transactionId, tenantId: tenant.tenantId, profileId: req.profileId, at },
      items,
    );
    if (outcome === "profile_not_found") throw profileNotFound(req.profileId);
    // the device ids and the transaction, never a device's user password
    await by.record({
      tenantId: tenant.tenantId,
      action: "enrollment.devices-uploaded",
      target: { kind: "transaction", id: transactionId },
      before: null,
      after: { transactionId, profileId: req.profileId, count: items.length, deviceIds: items.map((i) => i.deviceId) },
    });
    return { transactionId };
  }

  async list(tenantId: string, q: DeviceQuery): Promise<DevicePage> {
    const w = toWindow(q);
    if (q.transactionId) {
      const tx = await this.store.getTransaction(tenantId, q.transactionId);
      if (!tx) throw new AppError(catalog.RESOURCE_NOT_FOUND, "No such transaction");
      if (q.profileId && q.profileId !== tx.profileId) return { total: 0, processing: 0, items: [] };
      return this.store.listTransactionDevices(tenantId, q.transactionId, w.offset, w.limit);
    }
    return this.store.listDevices(tenantId, q.profileId, w.offset, w.limit);
  }

  async assign(tenantId: string, profileId: string, deviceIds: readonly string[], by: ChangeActor): Promise<number> {
    this.checkCount(deviceIds.length);
    const at = new Date(this.clock.nowMs()).toISOString();
    const ids = [...new Set(deviceIds)];
    const r = await this.store.assignDevices(tenantId, profileId, ids, at);
    if (r.ok) {
      await by.record({ tenantId, action: "enrollment.devices-assigned", target: { kind: "profile", id: profileId }, before: null, after: { profileId, count: r.count, deviceIds: ids } });
      return r.count;
    }
    if (r.reason === "profile_not_found") throw profileNotFound(profileId);
    throw new AppError(catalog.BULK_ENROLL_CONFIGURATION_DEVICE_NOT_FOUND, `Not enrolled: ${listIds(r.missing)}`);
  }

  async unassign(tenantId: string, deviceIds: readonly string[], by: ChangeActor): Promise<number> {
    this.checkCount(deviceIds.length);
    const at = new Date(this.clock.nowMs()).toISOString();
    const ids = [...new Set(deviceIds)];
    const r = await this.store.unassignDevices(tenantId, ids, at);
    if (r.ok) {
      await by.record({ tenantId, action: "enrollment.devices-unassigned", target: { kind: "devices", id: ids.length === 1 ? ids[0]! : `${ids.length} devices` }, before: null, after: { count: r.count, deviceIds: ids } });
      return r.count;
    }
    throw new AppError(catalog.DEVICE_NOT_FOUND, "Some/All devices don't exist");
  }
}

function profileNotFound(profileId: string): AppError {
  return new AppError(catalog.BULK_ENROLL_PROFILE_NOT_FOUND, `No profile ${profileId.slice(0, 64)}`);
}
