import { RedisStore } from "../../src/store/redis/redisStore.ts";
import { createTestRedisPrefix } from "./backends.ts";
import { storeConformance } from "./conformance.ts";

// A unique key prefix per run, deleted afterwards.
storeConformance("redis", ["nonces", "rateLimits", "jti"], async () => {
  const r = await createTestRedisPrefix("conf");
  const store = await RedisStore.open({ url: r.url, prefix: r.prefix });
  return {
    nonces: store,
    rateLimits: store,
    jti: store,
    close: async () => {
      await store.close();
      await r.clean();
    },
  };
});
