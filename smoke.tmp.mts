import { createReceiptSigningCa, encodeReceiptContent, signAppAttestReceipt } from "./src/attestation/sim/appAttestReceipt.ts";
import { verifyAppAttestReceipt } from "./src/attestation/encoding/appAttestReceipt.ts";
const ca = await createReceiptSigningCa();
const cred = ca.intermediate.certDer;
const now = new Date();
const content = encodeReceiptContent({ type: "RECEIPT", appId: "ABCDE12345.com.example.app", attestedCertificate: cred, createdAt: now, riskMetric: 7, notBefore: new Date(now.getTime()+86400000) });
const r = signAppAttestReceipt(ca, content);
console.log(r.length, verifyAppAttestReceipt(r, { appId: "ABCDE12345.com.example.app", credentialCertificate: cred, at: now, roots: [ca.root.certDer] }));
console.log(verifyAppAttestReceipt(r, { appId: "ABCDE12345.com.example.app", credentialCertificate: cred, at: now }));
