import type { Stores } from "../store/types.ts";
import { traceStoreCall } from "./spans.ts";

/** `getTenantByCustomerId` → `get_tenant_by_customer_id`: the span's operation, in OpenTelemetry's snake case */
export function operationName(method: string): string {
  return method.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/**
 * `store` with each method call going through `traceStoreCall`: a span per store call a traced request makes,
 * whatever service makes it (Part B, the portal, the rate limiter), with no store or service knowing about tracing.
 * Methods run on the store itself (`this` is the store, so private fields work); the wrappers are made once per
 * method. createRuntime wraps the stores only when tracing is on: off, the services get the stores themselves.
 */
export function storeWithSpans<T extends object>(store: T): T {
  const wrappers = new Map<string, unknown>();
  return new Proxy(store, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function" || typeof property !== "string" || property === "constructor") return value;
      let wrapper = wrappers.get(property);
      if (!wrapper) {
        const method = value as (...args: unknown[]) => unknown;
        const operation = operationName(property);
        wrapper = (...args: unknown[]) => traceStoreCall(operation, () => method.apply(target, args));
        wrappers.set(property, wrapper);
      }
      return wrapper;
    },
  });
}

/** every store the services use, with spans (`storeWithSpans`); `secrets` is read once at start, before tracing */
export function storesWithSpans(stores: Stores): Stores {
  return {
    ...stores,
    durable: storeWithSpans(stores.durable),
    nonces: storeWithSpans(stores.nonces),
    ...(stores.nonceVerdicts ? { nonceVerdicts: storeWithSpans(stores.nonceVerdicts) } : {}),
    ...(stores.nonceAppAttest ? { nonceAppAttest: storeWithSpans(stores.nonceAppAttest) } : {}),
    rateLimits: storeWithSpans(stores.rateLimits),
    enrollment: storeWithSpans(stores.enrollment),
    jti: storeWithSpans(stores.jti),
    signingKeys: storeWithSpans(stores.signingKeys),
  };
}
