/**
 * The one fixed "now" of the tests: 2026-11-22, after Google's 2016 root expired (issue 10) and inside every
 * certificate the simulators make. Tests that need another moment say why beside it (a real chain's validity
 * window, a wall clock for timers).
 */
export const T0 = Date.parse("2026-11-22T10:00:00.000Z");
