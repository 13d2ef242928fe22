// The annotate page's presence: keep this browser's token for resuming, and tell the server
// the worker is here, so their slot is kept; arrivals that never load the page only hold a
// slot briefly. The page's load is its first sign: reading the assignment's data stamps the
// worker's activity (app/annotation/read.py), so no heartbeat goes with it. After that a
// heartbeat goes at most once a minute while they interact, and not within a minute of a
// stored add, remove or position, which stamp the same activity (the outbox's
// "marginalia:stamped").
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
  lastBeat = Date.now(); // the page's data load stamps the activity
  window.addEventListener("marginalia:stamped", () => {
    lastBeat = Date.now();
  });
  for (const type of ["pointerdown", "keydown", "wheel", "touchstart"]) {
    window.addEventListener(type, onInteraction, { passive: true });
  }
}
