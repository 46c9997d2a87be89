/**
 * Routes every rejection of `store`'s promise-answering methods (those of its class) through `handle`, which throws
 * (the same error or one that says more) or answers by calling the method again (`again`). How a backend turns its
 * driver's failures into what the service acts on without touching each method: SQLite's lock waits and full disk
 * (`sqlite/lockWait.ts`), PostgreSQL's full disk seen by readiness (`health.ts`). Methods answering synchronously
 * are left as they are; a resolved call costs one `.catch`.
 */
export function onRejection(store: object, handle: (err: unknown, again: () => Promise<unknown>) => Promise<unknown>): void {
  const proto = Object.getPrototypeOf(store) as Record<string, unknown>;
  for (const name of Object.getOwnPropertyNames(proto)) {
    const method = Object.getOwnPropertyDescriptor(proto, name)?.value as unknown;
    if (name === "constructor" || typeof method !== "function") continue;
    const call = (args: unknown[]) => method.apply(store, args) as unknown;
    Object.defineProperty(store, name, {
      configurable: true,
      writable: true,
      value(...args: unknown[]) {
        const first = call(args);
        if (!(first instanceof Promise)) return first;
        return first.catch((err: unknown) => handle(err, () => call(args) as Promise<unknown>));
      },
    });
  }
}
