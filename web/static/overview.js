// The overview's charts (imported by portal.js on a page with a canvas[data-chart]): Chart.js from this service
// (its UMD build sets globalThis.Chart), fed by GET /portal/api/overview — the numbers of the tables beside them.
import "./vendor/chart.umd.min.js";

const { Chart } = globalThis;
const COLORS = { Yes: "#2e7d32", No: "#c62828", Unknown: "#9a6700" };
const canvases = [...document.querySelectorAll("canvas[data-chart]")];

function label(bucket) {
  // hours "2026-11-22T10" read as "10:00", days "2026-11-22" as "11-22"; the tooltip names the whole bucket
  return bucket.length === 13 ? `${bucket.slice(11, 13)}:00` : bucket.slice(5);
}

async function draw() {
  const res = await fetch(canvases[0].dataset.src, { credentials: "same-origin", headers: { accept: "application/json" } });
  if (!res.ok) throw new Error(`the overview's numbers could not be read (${res.status})`);
  const overview = await res.json();
  const style = getComputedStyle(document.body);
  Chart.defaults.color = style.color;
  Chart.defaults.font.family = style.fontFamily;
  Chart.defaults.font.size = 13;
  for (const canvas of canvases) {
    const points = overview.verdicts[canvas.dataset.chart];
    new Chart(canvas, {
      type: "bar",
      data: {
        labels: points.map((p) => label(p.bucket)),
        datasets: ["Yes", "No", "Unknown"].map((v) => ({ label: v, data: points.map((p) => p[v]), backgroundColor: COLORS[v] })),
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: {
          x: { stacked: true, ticks: { maxRotation: 0, autoSkip: true, autoSkipPadding: 8 } },
          y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } },
        },
        plugins: {
          legend: { position: "bottom" },
          tooltip: { callbacks: { title: (items) => `${points[items[0].dataIndex].bucket}${canvas.dataset.chart === "hourly" ? ":00 UTC" : " (UTC)"}` } },
        },
      },
    });
    canvas.dataset.drawn = "true";
  }
}

if (canvases.length && Chart) {
  draw().catch((err) => {
    for (const canvas of canvases) canvas.closest("figure")?.querySelector("figcaption")?.prepend(`${err.message}. `);
  });
}
