/** One line of the activity log (every request; errors with the errorId their body carried). */

export interface ActivityEntry {
  time: string;
  errorId: string | null;
  tenantId: string | null;
  clientId: string | null;
  method: string;
  route: string;
  status: number;
  code: string | null;
  latencyMs: number;
  remoteAddress: string;
}
