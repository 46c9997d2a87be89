/** One backend's line in /readyz (`Stores.health`): its ping answered, or the error it gave. */
export async function pingHealth(name: string, ping: () => Promise<unknown>) {
  try {
    await ping();
    return { name, ok: true };
  } catch (e) {
    return { name, ok: false, error: (e as Error).message };
  }
}
