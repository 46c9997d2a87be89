import type { BlobFormatName, DeviceFacts, VerdictValue } from "../attestation/types.ts";

export type { DeviceFacts };

/**
 * Per-device memory (docs/devices.md): the records a relying party's named device leaves behind, per tenant. A
 * device is named by the relying party (`deviceId`), never by attestd; its first `Yes` pins the facts the
 * appraisal authenticated, and later appraisals are compared with that pin.
 */

/** What a relying party may name a device: 1-128 of A-Z a-z 0-9 . _ : - (query parameter, batch field, route). */
export const DEVICE_ID_PATTERN = "^[A-Za-z0-9._:-]{1,128}$";
export const DEVICE_ID_RE = new RegExp(DEVICE_ID_PATTERN);

/**
 * How an appraisal of a named device stood to its pin:
 * - `first`: it pinned the device (a Yes, and no pin existed);
 * - `matched`: a pin exists and the appraisal's facts agree with it (levels at or above the marks);
 * - `changed`: an identity fact differs from the pin (or a pinned level is missing): verdict No;
 * - `downgrade`: no identity change, but a level is below its high-water mark: verdict No;
 * - `none`: nothing compared and nothing pinned: no pin exists and the verdict is not Yes, or the appraisal
 *   authenticated no facts (a chain, signature or nonce that failed; a device error).
 */
export type PinOutcome = "first" | "matched" | "changed" | "downgrade" | "none";
export const PIN_OUTCOMES: readonly PinOutcome[] = ["first", "matched", "changed", "downgrade", "none"];

/** One fact that differs from the pin; values as text, "" where a fact is absent. */
export interface FactChange {
  fact: string;
  from: string;
  to: string;
}

/** `detail.device` of a stored verdict appraised for a named device (read by the EAR and the portal). */
export interface VerdictDeviceDetail {
  deviceId: string;
  pin: PinOutcome;
  changes?: FactChange[];
}

/** What a device is pinned to. `levels` are high-water marks: the highest each level has been in a Yes. */
export interface DevicePin {
  pinnedAt: string;
  /** the verdict that pinned it */
  objectId: string;
  format: BlobFormatName;
  identity: Record<string, string>;
  levels: Record<string, number>;
  /** when a Yes last raised a mark (pinnedAt until then) */
  raisedAt: string;
}

/** The latest appraisal of a device, whatever its outcome. */
export interface DeviceAppraisalSummary {
  objectId: string;
  at: string;
  verdict: VerdictValue;
  status: string;
  pin: PinOutcome;
  /** what differed from the pin (changed, downgrade) */
  changes?: FactChange[];
}

/** The facts of the latest appraisal that authenticated any (a chain that failed proves nothing, so it keeps the older ones). */
export interface LatestDeviceFacts extends DeviceFacts {
  objectId: string;
  at: string;
}

/** One device of a tenant: its history (first and last seen, count, latest appraisal and facts) and its pin. */
export interface DeviceRecord {
  tenantId: string;
  deviceId: string;
  firstSeen: string;
  lastSeen: string;
  /** appraisals stored for it */
  count: number;
  last: DeviceAppraisalSummary;
  latestFacts: LatestDeviceFacts | null;
  pin: DevicePin | null;
  /** times an operator or tenant admin reset its pin (the audit records: DevicePinReset) */
  resets: number;
}

/** The audit record of one pin reset: who, when, and the pin it cleared (null when there was none). */
export interface DevicePinReset {
  tenantId: string;
  deviceId: string;
  at: string;
  /** who reset it, e.g. `cli` or a portal user id */
  by: string;
  previousPin: DevicePin | null;
}
