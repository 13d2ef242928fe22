// Forms that change what a researcher cannot take back lightly (reject a worker, block one,
// auto-accept) carry data-confirm: the browser asks before the form is sent. The text is the
// server's (worker IDs in it were escaped into the attribute), shown as plain text by confirm().

document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.confirm) return;
  if (!window.confirm(form.dataset.confirm)) event.preventDefault();
});
