import { cryptoRng } from "../../src/clock.ts";
import type { AuditActor } from "../../src/domain/audit.ts";
import { AuditTrail, type ChangeActor } from "../../src/services/auditTrail.ts";
import { MemoryDurableStore } from "../../src/store/memory/memoryDurableStore.ts";
import type { AuditStore } from "../../src/store/types.ts";
import { T0 } from "./clock.ts";

/**
 * A ChangeActor for tests that drive a service directly: an operator (`test`) at the CLI of host `test`, recording
 * into `store` (the service's own store, so a test can read the records back) or, when the test does not look at
 * them, into a memory store of its own.
 */
export function testActor(store: AuditStore = new MemoryDurableStore(), actor: AuditActor = { kind: "operator", id: "test" }): ChangeActor {
  // a millisecond per record, so records read back in the order they were made
  let ms = T0;
  return new AuditTrail(store, { nowMs: () => ++ms }, cryptoRng).as(actor, { kind: "cli", hostname: "test" });
}
