import { PgEnrollmentStore } from "../../src/store/postgres/pgEnrollmentStore.ts";
import { PgStore } from "../../src/store/postgres/pgStore.ts";
import { createTestDatabase } from "./backends.ts";
import { storeConformance } from "./conformance.ts";
import { portalConformance } from "./portalConformance.ts";
import { deviceConformance } from "./deviceConformance.ts";
import { statsConformance } from "./statsConformance.ts";
import { enrollmentConformance } from "./enrollmentConformance.ts";
import { signingKeyConformance } from "./signingKeyConformance.ts";
import { PgSigningKeyStore } from "../../src/store/postgres/pgSigningKeyStore.ts";
import { playAppConformance } from "./playAppConformance.ts";
import { webhookConformance } from "./webhookConformance.ts";
import { tenantPolicyConformance } from "./tenantPolicyConformance.ts";
import { auditConformance } from "./auditConformance.ts";
import { appAttestConformance } from "./appAttestConformance.ts";
import { PgSecretsStore } from "../../src/store/postgres/pgSecretsStore.ts";

// A fresh database per run: migrations run from scratch and the run leaves nothing behind.
storeConformance("postgres", ["durable", "nonces", "jti"], async () => {
  const db = await createTestDatabase("conf");
  const store = await PgStore.open({ url: db.url, poolMax: 10 });
  return {
    durable: store,
    nonces: store,
    jti: store,
    close: async () => {
      await store.close();
      await db.drop();
    },
  };
});

enrollmentConformance("postgres", async () => {
  const db = await createTestDatabase("enr");
  const store = await PgStore.open({ url: db.url, poolMax: 10 });
  return {
    durable: store,
    enrollment: new PgEnrollmentStore(store.pool),
    close: async () => {
      await store.close();
      await db.drop();
    },
  };
});

portalConformance("postgres", true, async () => {
  const db = await createTestDatabase("portal");
  const store = await PgStore.open({ url: db.url, poolMax: 10 });
  return {
    durable: store,
    enrollment: new PgEnrollmentStore(store.pool),
    close: async () => {
      await store.close();
      await db.drop();
    },
  };
});

signingKeyConformance("postgres", async () => {
  const db = await createTestDatabase("keys");
  // two pools, as two instances hold
  const a = await PgStore.open({ url: db.url, poolMax: 4 });
  const b = await PgStore.open({ url: db.url, poolMax: 4 });
  return {
    keys: new PgSigningKeyStore(a.pool),
    other: new PgSigningKeyStore(b.pool),
    close: async () => {
      await a.close();
      await b.close();
      await db.drop();
    },
  };
});

// Two pools on one database stand for two instances: their transactions race on separate connections.
deviceConformance("postgres", true, async () => {
  const db = await createTestDatabase("dev");
  const store = await PgStore.open({ url: db.url, poolMax: 10 });
  return {
    durable: store,
    openPeer: async () => {
      const peer = await PgStore.open({ url: db.url, poolMax: 10 });
      return { durable: peer, close: () => peer.close() };
    },
    close: async () => {
      await store.close();
      await db.drop();
    },
  };
});

statsConformance("postgres", false, async () => {
  const db = await createTestDatabase("stats");
  const store = await PgStore.open({ url: db.url, poolMax: 10 });
  return {
    durable: store,
    close: async () => {
      await store.close();
      await db.drop();
    },
  };
});

playAppConformance("postgres", async () => {
  const db = await createTestDatabase("play");
  const store = await PgStore.open({ url: db.url, poolMax: 4 });
  return {
    durable: store,
    rawSecret: async (_tenantId, id) => (await store.pool.query("SELECT secret FROM play_apps WHERE id = $1", [id])).rows[0]?.secret as string | undefined,
    secrets: new PgSecretsStore(store.pool),
    close: async () => {
      await store.close();
      await db.drop();
    },
  };
}, { rotates: true });

appAttestConformance("postgres", async () => {
  const db = await createTestDatabase("appattest");
  const store = await PgStore.open({ url: db.url, poolMax: 4 });
  const other = await PgStore.open({ url: db.url, poolMax: 4 });
  return {
    durable: store,
    other,
    // nonces live in the same store: the nonce, the key effect and the verdict commit as one
    nonceAppAttest: store,
    otherNonceAppAttest: other,
    close: async () => {
      await other.close();
      await store.close();
      await db.drop();
    },
  };
});

webhookConformance("postgres", async () => {
  const db = await createTestDatabase("webhooks");
  const store = await PgStore.open({ url: db.url, poolMax: 4 });
  const other = await PgStore.open({ url: db.url, poolMax: 4 });
  return {
    durable: store,
    other,
    close: async () => {
      await other.close();
      await store.close();
      await db.drop();
    },
  };
});

tenantPolicyConformance("postgres", async () => {
  const db = await createTestDatabase("policy");
  const store = await PgStore.open({ url: db.url, poolMax: 4 });
  return {
    durable: store,
    close: async () => {
      await store.close();
      await db.drop();
    },
  };
});

auditConformance("postgres", async () => {
  const db = await createTestDatabase("audit");
  const store = await PgStore.open({ url: db.url, poolMax: 4 });
  return {
    durable: store,
    close: async () => {
      await store.close();
      await db.drop();
    },
  };
});
