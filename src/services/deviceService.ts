import type { Clock } from "../clock.ts";
import { DEVICE_ID_RE, type DevicePinReset, type DeviceRecord } from "../domain/devices.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import type { AuditStore, DeviceStore } from "../store/types.ts";
import type { AuditRecord } from "../domain/audit.ts";
import type { NewWebhookDelivery } from "../domain/webhooks.ts";
import type { ChangeActor } from "./auditTrail.ts";

/** Refuses a relying party's device name that is not 1-128 of A-Z a-z 0-9 . _ : - (INVALID_REQUEST). */
export function checkDeviceId(deviceId: string): void {
  if (!DEVICE_ID_RE.test(deviceId)) {
    throw new AppError(catalog.INVALID_REQUEST, "deviceId must be 1-128 characters of A-Z a-z 0-9 . _ : -");
  }
}

/**
 * Per-device memory as its readers and administrators use it (docs/devices.md): a tenant's device history
 * (`GET /api/v1/devices/{deviceId}`, `attestd device show`) and the pin reset (`attestd device reset`, and the
 * portal's Attested devices page). Always within one tenant: another tenant's device is not found, never forbidden,
 * so a device name tells nothing about other tenants. Appraisals write the records (AttestationService); the pin
 * rules are devicePinning.ts's.
 */
export class DeviceService {
  constructor(
    private readonly store: DeviceStore & AuditStore,
    private readonly clock: Clock,
    /** signed webhooks (WebhookRegistry): device.pin.changed rows, written in the reset's transaction */
    private readonly webhooks?: { pinResetEvents(tenantId: string, data: { deviceId: string; at: string }): Promise<NewWebhookDelivery[]> },
  ) {}

  /** The device's record; A_NOT_FOUND when the tenant has none by that name. */
  async get(tenantId: string, deviceId: string): Promise<DeviceRecord> {
    checkDeviceId(deviceId);
    const d = await this.store.getDevice(tenantId, deviceId);
    if (!d) throw new AppError(catalog.A_NOT_FOUND, "No appraisal of a device by that deviceId");
    return d;
  }

  /**
   * A page of the tenant's devices in deviceId order, and the cursor of the next page (the last deviceId shown)
   * when there may be more (the portal's device list).
   */
  async list(tenantId: string, q: { after?: string | undefined; limit: number }): Promise<{ items: DeviceRecord[]; next: string | null }> {
    if (q.after !== undefined) checkDeviceId(q.after);
    const items = await this.store.listDevices(tenantId, { after: q.after, limit: q.limit });
    return { items, next: items.length === q.limit ? items[items.length - 1]!.deviceId : null };
  }

  /** The record with its pin resets as the audit trail keeps them, oldest first (the last 1 000: what an operator looks at). */
  async history(tenantId: string, deviceId: string): Promise<{ device: DeviceRecord; resets: DevicePinReset[] }> {
    const device = await this.get(tenantId, deviceId);
    const records = await this.store.queryAudit({ tenantId, action: PIN_RESET, targetKind: "device", targetId: deviceId, limit: 1000 });
    return { device, resets: records.reverse().map(pinResetOf) };
  }

  /**
   * Clears the pin so that the device's next Yes pins it afresh (a repaired phone, a new OS the owner chose), and
   * records who did it: its audit record (`device.pin-reset`, written in the reset's own transaction) keeps the pin
   * it cleared.
   */
  async resetPin(tenantId: string, deviceId: string, by: ChangeActor): Promise<DevicePinReset> {
    checkDeviceId(deviceId);
    const at = new Date(this.clock.nowMs()).toISOString();
    const events = (await this.webhooks?.pinResetEvents(tenantId, { deviceId, at })) ?? [];
    const record = await this.store.resetDevicePin(
      tenantId,
      deviceId,
      (previousPin) => by.stamp({ tenantId, action: PIN_RESET, target: { kind: "device", id: deviceId }, before: { pin: previousPin }, after: { pin: null } }),
      events,
    );
    if (!record) throw new AppError(catalog.A_NOT_FOUND, "No appraisal of a device by that deviceId");
    by.committed(record);
    return pinResetOf(record);
  }
}

const PIN_RESET = "device.pin-reset";

/** A pin reset as the device's history shows it, from its audit record: `by` is the person's email, else the actor's id. */
function pinResetOf(r: AuditRecord): DevicePinReset {
  const before = r.before as { pin?: DevicePinReset["previousPin"] } | null;
  return {
    tenantId: r.tenantId!,
    deviceId: r.target.id,
    at: r.time,
    by: r.actor.kind === "user" && r.actor.email ? r.actor.email : r.actor.id,
    previousPin: before?.pin ?? null,
  };
}
