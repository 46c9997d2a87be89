import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { SqliteEnrollmentStore, SqliteJtiStore } from "../../src/store/sqlite/sqliteEnrollmentStore.ts";
import { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import { storeConformance } from "./conformance.ts";
import { portalConformance } from "./portalConformance.ts";
import { deviceConformance } from "./deviceConformance.ts";
import { statsConformance } from "./statsConformance.ts";
import { enrollmentConformance } from "./enrollmentConformance.ts";
import { signingKeyConformance } from "./signingKeyConformance.ts";
import { SqliteSigningKeyStore } from "../../src/store/sqlite/sqliteSigningKeyStore.ts";
import { playAppConformance } from "./playAppConformance.ts";
import { webhookConformance } from "./webhookConformance.ts";
import { tenantPolicyConformance } from "./tenantPolicyConformance.ts";
import { auditConformance } from "./auditConformance.ts";
import { appAttestConformance } from "./appAttestConformance.ts";
import { SqliteSecretsStore } from "../../src/store/sqlite/sqliteSecretsStore.ts";

// A file, not ":memory:", so WAL and the IMMEDIATE transactions behave as in production. Rate limits on SQLite
// are in process (the memory suite) or, with --workers, in the cluster primary (test/scale/cluster.test.ts).
storeConformance("sqlite", ["durable", "nonces", "jti"], async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-conf-"));
  const store = new SqliteStore({ file: path.join(dir, "attestd.sqlite") });
  return {
    durable: store,
    nonces: store,
    jti: new SqliteJtiStore(store.db),
    close: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

enrollmentConformance("sqlite", async () => {
  const store = new SqliteStore({ file: ":memory:" });
  return { durable: store, enrollment: new SqliteEnrollmentStore(store.db), close: () => store.close() };
});

portalConformance("sqlite", true, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-portal-"));
  const store = new SqliteStore({ file: path.join(dir, "attestd.sqlite") });
  return {
    durable: store,
    enrollment: new SqliteEnrollmentStore(store.db),
    close: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

signingKeyConformance("sqlite", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-keys-"));
  // two connections to one file, as two processes (--workers, or a CLI beside the server) hold
  const a = new SqliteStore({ file: path.join(dir, "attestd.sqlite") });
  const b = new SqliteStore({ file: path.join(dir, "attestd.sqlite") });
  return {
    keys: new SqliteSigningKeyStore(a.db),
    other: new SqliteSigningKeyStore(b.db),
    close: async () => {
      await a.close();
      await b.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

// A file, so that a second SqliteStore on it is a second connection, as `--workers` siblings and the CLI are.
deviceConformance("sqlite", true, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-devices-"));
  const file = path.join(dir, "attestd.sqlite");
  const store = new SqliteStore({ file });
  return {
    durable: store,
    openPeer: async () => {
      const peer = new SqliteStore({ file });
      return { durable: peer, close: () => peer.close() };
    },
    close: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

statsConformance("sqlite", true, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-stats-"));
  const store = new SqliteStore({ file: path.join(dir, "attestd.sqlite") });
  return {
    durable: store,
    nonceVerdicts: store,
    close: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

playAppConformance("sqlite", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-play-"));
  const store = new SqliteStore({ file: path.join(dir, "attestd.sqlite") });
  return {
    durable: store,
    rawSecret: async (_tenantId, id) => store.db.prepare("SELECT secret FROM play_apps WHERE id = ?").get(id)?.secret as string | undefined,
    secrets: new SqliteSecretsStore(store.db),
    close: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}, { rotates: true });

appAttestConformance("sqlite", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-appattest-"));
  const file = path.join(dir, "attestd.sqlite");
  const store = new SqliteStore({ file });
  // another process's connection to the same file: the races go through SQLite's own locking
  const other = new SqliteStore({ file });
  return {
    durable: store,
    other,
    // nonces live in the same store: the nonce, the key effect and the verdict commit as one
    nonceAppAttest: store,
    otherNonceAppAttest: other,
    close: async () => {
      await other.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

webhookConformance("sqlite", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-webhooks-"));
  const file = path.join(dir, "attestd.sqlite");
  const store = new SqliteStore({ file });
  const other = new SqliteStore({ file, lockWaitMs: 2_000 });
  return {
    durable: store,
    other,
    nonceVerdicts: store,
    close: async () => {
      await other.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

tenantPolicyConformance("sqlite", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-policy-"));
  const store = new SqliteStore({ file: path.join(dir, "attestd.sqlite") });
  return {
    durable: store,
    close: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

auditConformance("sqlite", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "attestd-audit-"));
  const store = new SqliteStore({ file: path.join(dir, "attestd.sqlite") });
  return {
    durable: store,
    close: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
