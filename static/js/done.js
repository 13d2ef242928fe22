// Completion page: a Copy button for the completion code (shown only when the clipboard works);
// its messages come translated in the button's data attributes.

const button = document.getElementById("copy-code");
const status = document.getElementById("copy-status");

if (button && navigator.clipboard && window.isSecureContext) {
  button.hidden = false;
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(button.dataset.code || "");
      status.textContent = button.dataset.copied;
    } catch {
      status.textContent = button.dataset.failed;
    }
  });
}
