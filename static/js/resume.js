// The "work in progress elsewhere" page: if this browser kept the token for this worker ID,
// present it once (?resume=TOKEN) so the server can resume; otherwise the message stays.
import { rememberedToken } from "./resume-store.js";

const root = document.getElementById("resume");
const token = rememberedToken(root.dataset.study, root.dataset.worker);
if (token && root.dataset.tried !== "yes") {
  document.getElementById("resume-message").hidden = true;
  document.getElementById("resume-looking").hidden = false;
  const url = new URL(window.location.href);
  url.searchParams.set("resume", token);
  window.location.replace(url.toString());
}
