// Study dashboard: poll the progress JSON, update the counters at once, and when anything
// changed re-read the dashboard itself and swap in its live sections (tables, charts).
// The import jobs list is drawn from the JSON (text nodes only: file names are untrusted).

import { h } from "../dom.js";

const root = document.getElementById("dashboard");
const POLL_MS = Number(root && root.dataset.pollMs) || 5000;

function field(data, path) {
  return path.split(".").reduce((value, key) => (value == null ? value : value[key]), data);
}

function applyCounts(data) {
  for (const el of root.querySelectorAll("[data-field]")) {
    let value = field(data, el.dataset.field);
    if (value === undefined || value === null) continue;
    if (el.dataset.field === "updated_at") value = String(value).slice(11, 19);
    if (el.textContent !== String(value)) el.textContent = String(value);
  }
  const bar = document.getElementById("overall-progress");
  if (bar) bar.value = data.percent;
}

function renderImports(jobs) {
  const list = document.getElementById("import-jobs");
  if (!list || !Array.isArray(jobs)) return;
  const items = jobs.map((job) =>
    h(
      "li",
      { class: "import-job", dataset: { status: job.status } },
      h("span", { class: "import-file", text: job.filename }),
      ": ",
      h("span", { class: "import-message", text: job.message }),
    ),
  );
  list.replaceChildren(...items);
  const empty = document.getElementById("no-imports");
  if (empty) empty.hidden = items.length > 0;
}

async function swapSections() {
  const answer = await fetch(root.dataset.pageUrl, {
    headers: { Accept: "text/html" },
    credentials: "same-origin",
  });
  if (!answer.ok) return false;
  const fresh = new DOMParser().parseFromString(await answer.text(), "text/html");
  if (document.getElementById("report-pending") && !fresh.getElementById("report-pending")) {
    window.location.reload();  // a big study's first figures: the page gains its sections
    return false;
  }
  for (const section of document.querySelectorAll("[data-live][id]")) {
    const replacement = fresh.getElementById(section.id);
    if (!replacement) continue;
    section.replaceChildren(...replacement.childNodes);
    for (const name of ["state", "mode", "job"]) {  // the served report's state line
      if (name in replacement.dataset) section.dataset[name] = replacement.dataset[name];
      else delete section.dataset[name];
    }
  }
  return true;
}

let busy = false;

async function poll() {
  if (busy || document.hidden) return;
  busy = true;
  try {
    const answer = await fetch(root.dataset.progressUrl, {
      headers: { Accept: "application/json" },
      credentials: "same-origin",
    });
    if (answer.status === 401) {
      window.location.reload();  // logged out elsewhere: the page sends us to the log-in
      return;
    }
    if (!answer.ok) return;
    const data = await answer.json();
    const changed = data.fingerprint !== root.dataset.fingerprint;
    if (changed && (await swapSections())) root.dataset.fingerprint = data.fingerprint;
    applyCounts(data);
    renderImports(data.imports);
  } catch {
    // offline for a moment: the next poll tries again
  } finally {
    busy = false;
  }
}

if (root) {
  window.setInterval(poll, POLL_MS);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) poll();
  });
}
