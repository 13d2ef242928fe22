// The browser's own proof of its work: the token of the assignment it opened, kept per
// (study, worker ID) in localStorage (cookies are unreliable inside crowd platforms' iframes;
// localStorage is kept per framing site, so the same iframe finds it again).

const PREFIX = "marginalia.resume";
const TOKEN = /^[A-Za-z0-9_-]{1,64}$/;

function key(study, worker) {
  return `${PREFIX}:${encodeURIComponent(study)}:${encodeURIComponent(worker)}`;
}

/** Remember `token` as this browser's work for (study, worker); silent if storage is off. */
export function rememberToken(study, worker, token) {
  try {
    if (study && worker && TOKEN.test(token)) localStorage.setItem(key(study, worker), token);
  } catch {
    // storage disabled or full: resume then needs the platform's own session
  }
}

/** The token this browser kept for (study, worker), or null. */
export function rememberedToken(study, worker) {
  try {
    const token = localStorage.getItem(key(study, worker));
    return token && TOKEN.test(token) ? token : null;
  } catch {
    return null;
  }
}
