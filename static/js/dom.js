// Tiny DOM builder. Children that are strings become text nodes: document text is never
// parsed as HTML anywhere on the page (no innerHTML).

/**
 * Create an element.
 * props: class, text, dataset {..}, on<event> handlers, anything else as an attribute
 * (true -> empty attribute, false/null/undefined -> omitted).
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = String(value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/** Append children (nodes or strings, nested arrays allowed) as nodes / text nodes. */
export function append(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Remove every child of an element. */
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

/** Set a CSS custom property (CSSOM: allowed under our CSP, unlike style attributes). */
export function setVar(el, name, value) {
  if (value) el.style.setProperty(name, value);
  return el;
}

/** The element with this id (throws when the template lacks it: a bug, not a state). */
export function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from the page`);
  return el;
}
