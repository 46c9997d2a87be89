import { MemoryDurableStore } from "../../src/store/memory/memoryDurableStore.ts";
import { MemoryJtiStore } from "../../src/store/memory/memoryJtiStore.ts";
import { MemoryNonceStore } from "../../src/store/memory/memoryNonceStore.ts";
import { MemoryRateLimitStore } from "../../src/store/memory/memoryRateLimitStore.ts";
import { storeConformance } from "./conformance.ts";
import { portalConformance } from "./portalConformance.ts";
import { signingKeyConformance } from "./signingKeyConformance.ts";
import { MemorySigningKeyStore } from "../../src/store/memory/memorySigningKeyStore.ts";
import { deviceConformance } from "./deviceConformance.ts";
import { statsConformance } from "./statsConformance.ts";
import { playAppConformance } from "./playAppConformance.ts";
import { webhookConformance } from "./webhookConformance.ts";
import { tenantPolicyConformance } from "./tenantPolicyConformance.ts";
import { auditConformance } from "./auditConformance.ts";
import { appAttestConformance } from "./appAttestConformance.ts";

storeConformance("memory", ["durable", "nonces", "rateLimits", "jti"], async () => {
  const durable = new MemoryDurableStore();
  return {
    durable,
    nonces: new MemoryNonceStore(),
    rateLimits: new MemoryRateLimitStore(),
    jti: new MemoryJtiStore(),
    close: () => durable.close(),
  };
});

portalConformance("memory", false, async () => {
  const durable = new MemoryDurableStore();
  return { durable, close: () => durable.close() };
});

signingKeyConformance("memory", async () => {
  const keys = new MemorySigningKeyStore();
  return { keys, other: keys, close: async () => undefined };
});

deviceConformance("memory", false, async () => {
  const durable = new MemoryDurableStore();
  return { durable, close: () => durable.close() };
});

statsConformance("memory", false, async () => {
  const durable = new MemoryDurableStore();
  return { durable, close: () => durable.close() };
});

playAppConformance("memory", async () => {
  const durable = new MemoryDurableStore();
  return { durable, rawSecret: async (tenantId, id) => (await durable.getPlayApp(tenantId, id))?.sealedSecret, close: () => durable.close() };
}, { rotates: false });

appAttestConformance("memory", async () => {
  const durable = new MemoryDurableStore();
  return { durable, close: () => durable.close() };
});

webhookConformance("memory", async () => {
  const durable = new MemoryDurableStore();
  return { durable, close: () => durable.close() };
});

tenantPolicyConformance("memory", async () => {
  const durable = new MemoryDurableStore();
  return { durable, close: () => durable.close() };
});

auditConformance("memory", async () => {
  const durable = new MemoryDurableStore();
  return { durable, close: () => durable.close() };
});
