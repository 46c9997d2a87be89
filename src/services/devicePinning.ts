import type { DeviceFacts } from "../attestation/types.ts";
import type { DevicePin, DeviceRecord, FactChange, PinOutcome, VerdictDeviceDetail } from "../domain/devices.ts";
import type { StoredVerdict } from "../domain/verdicts.ts";

/**
 * Trust on first use, as one pure decision (docs/devices.md): given a named device's record as it stands and one
 * appraisal of it, the verdict to store and answer and the device's new record. The store calls it inside the
 * transaction that writes both, with the record locked against every other appraisal of the device
 * (`DeviceStore.saveDeviceVerdict`), so concurrent first appraisals each see the pin the winner wrote.
 *
 * The rules:
 * - The first `Yes` with authenticated facts pins them: identity facts as they are, levels as high-water marks.
 * - Later, an identity fact that differs (absent counts as ""), another blob format, or a pinned level that is
 *   missing is `changed`; else a level below its mark is `downgrade`. Either makes the verdict `No`, with what
 *   changed in `detail.device.changes` and the stored `reason`.
 * - Only a `Yes` moves the pin: a matching `Yes` raises the marks to its levels (an update is not a change); a
 *   `No` or `Unknown` is compared and recorded in the history but never pins, raises or clears anything.
 * - Every stored appraisal counts in the history (last seen, count, the latest appraisal); the latest facts are
 *   those of the latest appraisal that authenticated any.
 */

export interface DeviceAppraisal {
  deviceId: string;
  /** the verdict as the appraisal made it, before the device's pin is consulted */
  verdict: StoredVerdict;
  /** the appraisal's pinnable facts; undefined when it authenticated none */
  facts: DeviceFacts | undefined;
}

export interface PinnedAppraisal {
  verdict: StoredVerdict;
  device: DeviceRecord;
}

export interface PinComparison {
  outcome: "matched" | "changed" | "downgrade";
  /** what differs, identity facts first, in the pin's order; empty when matched */
  changes: FactChange[];
  /** the marks after a Yes with these facts (each level the higher of mark and fact) */
  raisedLevels: Record<string, number>;
}

const text = (v: string | number | undefined) => (v === undefined ? "" : String(v));

/** `facts` against `pin`: what differs and how, and the marks a Yes would leave. */
export function comparePin(pin: DevicePin, facts: DeviceFacts): PinComparison {
  if (pin.format !== facts.format) {
    return { outcome: "changed", changes: [{ fact: "format", from: pin.format, to: facts.format }], raisedLevels: pin.levels };
  }
  const changes: FactChange[] = [];
  let changed = false;
  let downgraded = false;
  const names = [...Object.keys(pin.identity), ...Object.keys(facts.identity).filter((k) => !(k in pin.identity))];
  for (const fact of names) {
    const from = text(pin.identity[fact]);
    const to = text(facts.identity[fact]);
    if (from !== to) {
      changes.push({ fact, from, to });
      changed = true;
    }
  }
  const raisedLevels = { ...pin.levels };
  for (const [fact, mark] of Object.entries(pin.levels)) {
    const now = facts.levels[fact];
    if (now === undefined) {
      // a level the device used to attest and no longer does is not an update
      changes.push({ fact, from: String(mark), to: "" });
      changed = true;
    } else if (now < mark) {
      changes.push({ fact, from: String(mark), to: String(now) });
      downgraded = true;
    }
  }
  for (const [fact, now] of Object.entries(facts.levels)) {
    if (!(fact in raisedLevels) || now > raisedLevels[fact]!) raisedLevels[fact] = now;
  }
  return { outcome: changed ? "changed" : downgraded ? "downgrade" : "matched", changes, raisedLevels };
}

/** One line: `osPatchLevel from 202405 to 202401, verifiedBootKey from … to …`. */
export function describeChanges(changes: readonly FactChange[]): string {
  return changes.map((c) => `${c.fact} from ${c.from || "(none)"} to ${c.to || "(none)"}`).join(", ");
}

function sameLevels(a: Record<string, number>, b: Record<string, number>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}

/** The decision: `current` is the device's record (undefined for a device never seen), `a` the appraisal. */
export function applyDevicePin(current: DeviceRecord | undefined, a: DeviceAppraisal): PinnedAppraisal {
  const v = a.verdict;
  const at = v.createdAt;
  const appraised = v.record.verdict;
  let pin = current?.pin ?? null;
  let outcome: PinOutcome = "none";
  let changes: FactChange[] = [];

  if (a.facts && !pin) {
    if (appraised === "Yes") {
      pin = {
        pinnedAt: at,
        objectId: v.objectId,
        format: a.facts.format,
        identity: { ...a.facts.identity },
        levels: { ...a.facts.levels },
        raisedAt: at,
      };
      outcome = "first";
    }
  } else if (a.facts && pin) {
    const cmp = comparePin(pin, a.facts);
    outcome = cmp.outcome;
    changes = cmp.changes;
    if (outcome === "matched" && appraised === "Yes" && !sameLevels(cmp.raisedLevels, pin.levels)) {
      pin = { ...pin, levels: cmp.raisedLevels, raisedAt: at };
    }
  }

  const device: VerdictDeviceDetail = { deviceId: a.deviceId, pin: outcome, ...(changes.length ? { changes } : {}) };
  const refused = outcome === "changed" || outcome === "downgrade";
  const verdict: StoredVerdict = {
    ...v,
    record: refused ? { ...v.record, verdict: "No" } : v.record,
    reason: refused ? `device pin ${outcome}: ${describeChanges(changes)}; appraisal: ${v.reason}` : v.reason,
    detail: { ...v.detail, device },
  };
  return {
    verdict,
    device: {
      tenantId: v.tenantId,
      deviceId: a.deviceId,
      firstSeen: current?.firstSeen ?? at,
      lastSeen: at,
      count: (current?.count ?? 0) + 1,
      last: { objectId: v.objectId, at, verdict: verdict.record.verdict, status: v.record.status, pin: outcome, ...(changes.length ? { changes } : {}) },
      latestFacts: a.facts ? { ...a.facts, objectId: v.objectId, at } : (current?.latestFacts ?? null),
      pin,
      resets: current?.resets ?? 0,
    },
  };
}
