// Read a Vercel AI UI Message Stream (v1, SSE) from a fetch() Response: one JSON chunk per `data:` event.

/** Call onChunk(chunk) for every chunk until `[DONE]` or the end of the body. */
export async function readUIStream(response, onChunk) {
  const reader = response.body.getReader();
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
      if (dispatch(event)) { reader.cancel().catch(() => {}); return; }
    }
  }
  if (buffer.trim()) dispatch(buffer);
}
