// The annotate page's presence: keep this browser's token for resuming, and tell the server
// the worker is here (a heartbeat on load, then at most once a minute while they interact),
// so their slot is kept; arrivals that never load the page only hold a slot briefly. A stored
// add, remove or position stamps the same activity (the outbox's "marginalia:stamped"), so
// no heartbeat goes out within a minute of one.
import { rememberToken } from "./resume-store.js";

const root = document.getElementById("annotate");
const HEARTBEAT_EVERY_MS = 60_000;
let lastBeat = 0;

function beat() {
  lastBeat = Date.now();
  fetch(`${root.dataset.api}/heartbeat`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: "{}",
    keepalive: true,
  }).catch(() => {
    // offline: the next interaction tries again
  });
}

function onInteraction() {
  if (Date.now() - lastBeat >= HEARTBEAT_EVERY_MS) beat();
}

if (root) {
  rememberToken(root.dataset.study, root.dataset.worker, root.dataset.token);
  beat();
  window.addEventListener("marginalia:stamped", () => {
    lastBeat = Date.now();
  });
  for (const type of ["pointerdown", "keydown", "wheel", "touchstart"]) {
    window.addEventListener(type, onInteraction, { passive: true });
  }
}
