/**
 * Device identifiers accepted for enrollment: an IMEI (15 digits whose last is the Luhn check digit of the first
 * 14) or a serial number ([A-Z0-9]{8,20}). Fifteen digits are always read as an IMEI, so a mistyped IMEI is
 * refused rather than taken as a serial number.
 */
const SERIAL_RE = /^[A-Z0-9]{8,20}$/;

export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

export function isValidDeviceId(id: string): boolean {
  if (/^\d{15}$/.test(id)) return luhnValid(id);
  return SERIAL_RE.test(id);
}

/** Appends the Luhn check digit to 14 digits (tests and the docs make valid IMEIs with it). */
export function imeiFrom14(digits14: string): string {
  for (let c = 0; c <= 9; c++) if (luhnValid(digits14 + c)) return digits14 + c;
  throw new Error("unreachable");
}
