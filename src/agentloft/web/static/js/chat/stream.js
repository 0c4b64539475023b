// Read a Vercel AI UI Message Stream (v1, SSE) from a fetch() Response: one JSON chunk per `data:` event.

/** Call onChunk(chunk) for every chunk until `[DONE]` or the end of the body; answers whether `[DONE]`
 * came (the server ends every stream with it: without it, the connection was cut). Aborting `signal`
 * stops reading at once (a dead connection may otherwise hang for minutes) and rejects with its reason. */
export async function readUIStream(response, onChunk, signal = null) {
  const reader = response.body.getReader();
  const abandon = () => { reader.cancel().catch(() => {}); };
  signal?.addEventListener('abort', abandon, { once: true });
  let done;
  try {
    done = await readAll(reader, onChunk);
  } finally {
    signal?.removeEventListener('abort', abandon);
  }
  if (signal?.aborted) throw signal.reason;
  return done;
}

async function readAll(reader, onChunk) {
  const decoder = new TextDecoder();
  let buffer = '';
  const dispatch = (event) => {
    const data = event.split('\n').filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5)).join('\n');
    if (!data) return false;
    if (data === '[DONE]') return true;
    let chunk;
    try { chunk = JSON.parse(data); } catch { return false; }
    onChunk(chunk);
    return false;
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, '\n');
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      if (dispatch(event)) { reader.cancel().catch(() => {}); return true; }
    }
  }
  return buffer.trim() ? dispatch(buffer) : false;
}
