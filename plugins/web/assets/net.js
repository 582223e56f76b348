// The page's calls to the harness: every change is a POST with JSON and
// the session's CSRF token.

let csrf = '';

// setCSRF keeps the session's CSRF token for the POSTs that follow.
export function setCSRF(token) {
  csrf = token;
}

// api POSTs body to path and returns the decoded answer; an error answer
// throws an Error carrying its message (and, for a form, the problems of
// its fields, by name).
export async function api(path, body, signal) {
  const res = await fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
    body: JSON.stringify(body || {}),
    credentials: 'same-origin',
    signal,
  });
  let data = {};
  try {
    data = await res.json();
  } catch {
    data = { error: `HTTP ${res.status}` };
  }
  if (!res.ok) {
    const err = new Error(data.error || `HTTP ${res.status}`);
    err.status = res.status;
    err.problems = data.problems;
    throw err;
  }
  return data;
}
