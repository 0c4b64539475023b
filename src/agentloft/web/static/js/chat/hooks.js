// Extension points of the chat page.
//
// `data-*` chunks (custom events from tools) are shown by handlers registered here by chunk type.
// Every module in static/js/chat/extensions/ is loaded by the chat page (the page route lists that
// folder), so an extension is one new file there and no edit elsewhere. The A2A side panel
// (extensions/a2a-panel.js) plugs in like this:
//
//   import { chunkListeners, dataHandlers } from '../hooks.js';
//   chunkListeners.push((chunk, ctx) => { /* an agent-invoke call starts: open its panel in ctx.panel */ });
//   dataHandlers['data-a2a-task-started'] = (data, ctx) => { /* follow data.taskId's stream */ };
//
// ctx.panel is the <aside id="chat-side-panel">, hidden until shown; ctx.live is false when the chunk
// comes from saved history on page load.
// A handler may return a DOM node to show inline in the message instead of the default notice line.

export const dataHandlers = {};

// Every live chunk of a reply the page follows (not the saved history) also goes to each function here,
// with the same context as a data handler: e.g. the A2A panel opens when an agent-invoke call starts.
export const chunkListeners = [];

/** Hand a live chunk to every listener; one that throws does not stop the others or the chat. */
export function notifyChunk(chunk, ctx) {
  for (const listener of chunkListeners) {
    try { listener(chunk, ctx); } catch (error) { console.error('chat chunk listener failed', error); }
  }
}

/** Run the handler for a data part; answer what to show inline (a node, or null for the default). */
export function handleData(part, ctx) {
  const handler = dataHandlers[part.type];
  if (!handler) return null;
  try {
    return handler(part.data, ctx) || null;
  } catch (error) {
    console.error(`chat extension for ${part.type} failed`, error);
    return null;
  }
}
