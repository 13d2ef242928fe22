// MTurk done page: post the assignment back to Mechanical Turk (the form works without JS too).

const form = document.getElementById("mturk-submit");
const status = document.getElementById("mturk-status");

if (form && form.dataset.auto === "1") {
  if (status) status.textContent = form.dataset.sending;
  window.setTimeout(() => form.submit(), 400);
}
