// Access to the service's /v1 API: the bearer token, asked once, kept in sessionStorage, never
// in a URL, never logged.

import { $ } from './dom.js';

const TOKEN_KEY = 'agent-intake.apiToken';

let token = sessionStorage.getItem(TOKEN_KEY) ?? '';
let tokenWaiters = [];

// X-Requested-With: without a token, the service refuses a change (POST) that lacks a header a
// page on another site could not send unasked.
function headers() {
  return { 'X-Requested-With': 'agent-intake-console', ...(token ? { Authorization: `Bearer ${token}` } : {}) };
}

/** Show the token form; resolves once a token was entered. */
function needToken(refused) {
  if (refused && token) {
    token = '';
    sessionStorage.removeItem(TOKEN_KEY);
    $('token-error').hidden = false;
  }
  $('forget-token').hidden = true;
  $('token-panel').hidden = false;
  $('token-input').focus();
  return new Promise((resolve) => tokenWaiters.push(resolve));
}

$('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  token = $('token-input').value.trim();
  if (!token) return;
  sessionStorage.setItem(TOKEN_KEY, token);
  $('token-input').value = '';
  $('token-error').hidden = true;
  $('token-panel').hidden = true;
  $('forget-token').hidden = false;
  const waiters = tokenWaiters;
  tokenWaiters = [];
  for (const resolve of waiters) resolve();
});

$('forget-token').addEventListener('click', () => {
  token = '';
  sessionStorage.removeItem(TOKEN_KEY);
  location.reload();
});

/** A /v1 call with the token; a 401 brings the prompt back and tries again once a token is given. */
export async function api(path, init = {}) {
  for (;;) {
    const response = await fetch(path, {
      ...init,
      headers: { ...headers(), ...(init.headers ?? {}) },
      cache: 'no-store',
    });
    if (response.status !== 401) {
      if (token) $('forget-token').hidden = false;
      return response;
    }
    await needToken(true);
  }
}

/** `api()` for a JSON answer; a non-2xx answer throws an Error with the API's message and `status`. */
export async function apiJson(path, init) {
  const response = await api(path, init);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body?.error?.message ?? `${path} answered ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return body;
}
