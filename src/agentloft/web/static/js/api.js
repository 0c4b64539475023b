// fetch() wrapper for the JSON API: same-origin cookies, the CSRF double-submit header, one error type.

export class ApiError extends Error {
  /** `fields`: the API's (English) words per field; `fieldCodes`: the same problems as codes with their
   * values ({message: {code: 'string_too_long', params: {max_length: 100000}}}), worded by the pages;
   * `requestId`: the request's id (the error body's, else its X-Request-ID), which the pages show so a
   * reader's report of the error can be found in the server's log. */
  constructor(status, code, message, fields, fieldCodes, requestId) {
    super(message);
    this.status = status;
    this.code = code;
    this.fields = fields || {};
    this.fieldCodes = fieldCodes || {};
    this.requestId = requestId || '';
  }
}

export function cookie(name) {
  const prefix = `${name}=`;
  for (const part of document.cookie.split(';')) {
    const item = part.trim();
    if (item.startsWith(prefix)) return decodeURIComponent(item.slice(prefix.length));
  }
  return '';
}

/** Headers for a request; writes echo the readable `agentloft_csrf` cookie. */
export function requestHeaders(method, hasBody, extra = {}) {
  const headers = { Accept: 'application/json', ...extra };
  if (hasBody) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD') headers['X-CSRF-Token'] = cookie('agentloft_csrf');
  return headers;
}

/** Turn a non-2xx response into an ApiError carrying the API's code and (English) message. */
export async function errorFrom(response) {
  let body = null;
  try { body = await response.json(); } catch { /* not JSON */ }
  const err = body && body.error ? body.error : {};
  return new ApiError(response.status, err.code || 'http_error',
    err.message || `${response.status} ${response.statusText}`, err.fields, err.fieldCodes,
    err.requestId || response.headers.get('X-Request-ID'));
}

let signingOut = false;

/** Sign out and go to the sign-in page. A request of the page that fails meanwhile (its session is gone)
 * does not turn that into a sign-in that leads back here, for whoever signs in next. */
export async function signOut() {
  signingOut = true;
  try { await api('POST', '/api/auth/logout'); } finally { window.location.assign('/login'); }
}

export async function api(method, url, body, { signal } = {}) {
  const hasBody = body !== undefined;
  let response;
  try {
    response = await fetch(url, {
      method,
      credentials: 'same-origin',
      headers: requestHeaders(method, hasBody),
      body: hasBody ? JSON.stringify(body) : undefined,
      signal,
    });
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    throw new ApiError(0, 'network', error.message); // offline, server down: pages word it by the code
  }
  if (!response.ok) {
    const error = await errorFrom(response);
    if (error.status === 401 && error.code === 'not_authenticated' && !signingOut) {
      window.location.assign(`/login?next=${encodeURIComponent(location.pathname + location.search)}`);
    }
    throw error;
  }
  if (response.status === 204) return null;
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

/** Every item of a paged list endpoint ({items, hasMore}); admin lists are small. */
export async function loadAll(url, pageSize = 100) {
  const items = [];
  const sep = url.includes('?') ? '&' : '?';
  for (let page = 1; page < 1000; page += 1) {
    const data = await api('GET', `${url}${sep}page=${page}&pageSize=${pageSize}`);
    items.push(...data.items);
    if (!data.hasMore) break;
  }
  return items;
}

/** Upload one file (`POST /api/files`, multipart field `file`); resolves to the stored file's row, rejects
 * with an ApiError (or an AbortError once `signal` aborts it). `onProgress(fraction)` follows the upload:
 * XMLHttpRequest, since fetch() reports no upload progress. */
export function upload(file, { onProgress, signal } = {}) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/api/files');
    for (const [name, value] of Object.entries(requestHeaders('POST', false))) xhr.setRequestHeader(name, value);
    if (onProgress) {
      xhr.upload.addEventListener('progress', (event) => {
        if (event.lengthComputable) onProgress(event.loaded / event.total);
      });
    }
    xhr.addEventListener('load', () => {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch { /* not JSON */ }
      if (xhr.status >= 200 && xhr.status < 300 && body) { resolve(body); return; }
      const err = (body && body.error) || {};
      reject(new ApiError(xhr.status, err.code || 'http_error', err.message || `HTTP ${xhr.status}`, err.fields,
        err.fieldCodes, err.requestId || xhr.getResponseHeader('X-Request-ID')));
    });
    xhr.addEventListener('error', () => reject(new ApiError(0, 'network', 'network error')));
    xhr.addEventListener('abort', () => reject(new DOMException('upload aborted', 'AbortError')));
    if (signal) signal.addEventListener('abort', () => xhr.abort(), { once: true });
    const data = new FormData();
    data.append('file', file, file.name);
    xhr.send(data);
  });
}
