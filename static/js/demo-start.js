// The demo study's start page: a browser with no worker ID for the demo is given its own
// (resume-store.js keeps it) and arrives with it at once, so every browser on the printed
// URL gets its own work and comes back to it (a second arrival with work in progress is the
// "work in progress elsewhere" page, whose script presents the token this browser kept).
// When that ID has done every document, the page offers a new one instead of arriving again.
// Without scripts or storage the page's form still takes any typed ID.
import { demoWorkerId } from "./resume-store.js";

const root = document.getElementById("start");
const study = root.dataset.study;

function arrive(workerId) {
  const url = new URL(window.location.href);
  url.searchParams.set("worker_id", workerId);
  window.location.replace(url.toString());
}

if (document.getElementById("start-error")) {
  const again = document.getElementById("demo-new-id");
  again.hidden = false;
  again.addEventListener("click", () => arrive(demoWorkerId(study, true)));
} else if (!new URL(window.location.href).searchParams.get("worker_id")) {
  document.getElementById("demo-starting").hidden = false;
  arrive(demoWorkerId(study));
}
