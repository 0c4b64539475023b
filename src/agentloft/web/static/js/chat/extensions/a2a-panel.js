// Chat extension: the A2A side panel (seed 003, 3.3). When a reply hands a sub-task to another agent,
// `data-a2a-task-started` arrives in the caller's stream the moment the call starts; the panel for that
// call opens in the chat's side panel and streams the called agent's reply (see ../a2a-panel-view.js).

import { dataHandlers } from '../hooks.js';
import { attachA2APanels } from '../a2a-panel-view.js';

let panels = null;

function inlineNote(data) {
  const note = document.createElement('p');
  note.className = 'notice-line a2a-note';
  note.dataset.part = 'data-a2a-task-started';
  note.textContent = `→ ${data.calleeAgentName || data.calleeAgentSlug}`;
  return note;
}

dataHandlers['data-a2a-task-started'] = (data, ctx) => {
  if (ctx.live && data && data.taskId) {
    panels = panels || attachA2APanels(ctx.panel || null);
    panels.handleChunk({ type: 'data-a2a-task-started', data });
  }
  return inlineNote(data || {});
};
