import { startPortalInBrowser } from "./harness.ts";
import { attestdCli } from "../helpers/serverProcess.ts";
const T = "acme-international-device-attestation-holdings-europe-west-00001";
const p = await startPortalInBrowser({ tenants: [T], seed: (dir, data) => { attestdCli(["key", "create", "--tenant", T, "--label", "production web shop for the European storefront, Android and vendor devices, rotated", ...data]); } });
const { page } = await p.signIn("a@b.example", ["--operator"]);
const urls = process.argv.slice(2);
for (const u of urls) {
  await page.goto(p.base + u);
  console.log(u, await page.evaluate(`(() => { const t = document.querySelector("main table"); const w = t?.closest(".table-wrap");
    const before = t?.scrollWidth; if (t) t.style.width = "1px"; const minw = t?.scrollWidth; const mins = [...(t?.querySelectorAll("tbody tr:first-child > *") ?? [])].map((td) => Math.round(td.getBoundingClientRect().width)); if (t) t.style.width = ""; return { before, minw, mins, main: document.querySelector("main").getBoundingClientRect().width, wrap: w?.clientWidth, table: t?.scrollWidth,
      cols: [...(t?.querySelectorAll("thead th") ?? [])].map((th) => th.textContent + ":" + Math.round(th.getBoundingClientRect().width)),
      cells: [...(t?.querySelectorAll("tbody tr:first-child > *") ?? [])].map((td) => Math.round(td.getBoundingClientRect().width) + "/" + getComputedStyle(td).overflowWrap + "/" + getComputedStyle(td).whiteSpace) }; })()`));
}
await p.stop();
