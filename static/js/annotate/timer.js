// Active time on task, per segment: time counts while the page is visible and focused; the
// time since the worker's last input (key, pointer, wheel, touch, scroll) counts once they
// act again within a minute, so an idle gap over a minute is left out entirely. The seconds
// go to the server with the position updates (nav.js), and when the tab is hidden (with the
// hint events still waiting for a move).

import { page, state } from "./state.js";

const IDLE_MS = 60_000;
const TICK_MS = 1000;
const INPUTS = ["keydown", "pointerdown", "pointermove", "wheel", "touchstart", "scroll"];

let lastInput = performance.now();
let lastTick = lastInput;
let tentative = 0; // ms since the last input: active only if the worker acts within IDLE_MS
const measured = new Map(); // segment index -> ms not yet sent

function attentive() {
  return document.visibilityState === "visible" && document.hasFocus();
}

function tick() {
  const now = performance.now();
  const step = Math.min(now - lastTick, 2 * TICK_MS);
  lastTick = now;
  if (now - lastInput > IDLE_MS) {
    tentative = 0; // a gap over a minute: none of it counts
    return;
  }
  if (attentive() && !state.readOnly) tentative += step;
}

function commit() {
  if (tentative > 0 && performance.now() - lastInput <= IDLE_MS) {
    measured.set(state.current, (measured.get(state.current) || 0) + tentative);
  }
  tentative = 0;
}

function input() {
  tick();
  commit();
  lastInput = performance.now();
}

/** The active seconds measured since the last call, by segment ({"3": 12.5}); resets. */
export function takeActive() {
  tick();
  commit();
  const out = {};
  for (const [segment, ms] of measured) {
    if (ms >= 50) out[String(segment)] = Math.round(ms / 100) / 10;
  }
  measured.clear();
  return out;
}

/** Start measuring: the input listeners (capture, so they run before a move's handler). */
export function wireTimer() {
  for (const name of INPUTS) {
    document.addEventListener(name, input, { capture: true, passive: true });
  }
  window.setInterval(tick, TICK_MS);
  // Leaving the tab (or closing it): what was measured on this segment goes out now, and
  // the hint events waiting for a move with it (or on their own).
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState !== "hidden" || state.readOnly || !state.data) return;
    const active = takeActive();
    if (Object.keys(active).length) page.outbox.push({ kind: "position", segment: state.current, active });
    page.outbox.release();
  });
}
