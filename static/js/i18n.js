// The page's own text in the worker's language: the table the server rendered into
// <script type="application/json" id="ui-messages"> (English in app/web/messages.py, the
// translations in app/translations/, picked by app/web/i18n.py). Data, not code: the CSP
// allows no inline script and needs none here. t("key", {n: 3}) fills {n}; a key missing
// from the table shows as itself (tests/test_i18n.py checks every key used here exists).

function readTable() {
  const node = document.getElementById("ui-messages");
  if (!node) return {};
  try {
    return JSON.parse(node.textContent) || {};
  } catch {
    return {};
  }
}

const table = readTable();

/** The message `key` with its {placeholders} filled from `params` (inserted as given). */
export function t(key, params = {}) {
  const text = Object.hasOwn(table, key) ? table[key] : key;
  return text.replace(/\{(\w+)\}/g, (whole, name) =>
    Object.hasOwn(params, name) ? String(params[name]) : whole,
  );
}
