// Chat extension: the A2A side panel (seed 003, 3.3). When a reply hands a sub-task to another agent,
// `data-a2a-task-started` arrives in the caller's stream the moment the call starts; the panel for that
// call opens in the chat's side panel and streams the called agent's reply (see ../a2a-panel-view.js).

import { chunkListeners, dataHandlers } from '../hooks.js';
import { attachA2APanels } from '../a2a-panel-view.js';

let panels = null;
const panelsIn = (ctx) => { panels = panels || attachA2APanels(ctx.panel || null); return panels; };

// The call's own chunks open the panel as soon as it starts (waiting for the called agent's reply),
// before the task exists; `data-a2a-task-started` below then gives it the task to follow.
chunkListeners.push((chunk, ctx) => {
  if (chunk.type === 'tool-input-available' || chunk.type === 'tool-approval-request'
      || chunk.type === 'tool-output-available' || chunk.type === 'tool-output-error') {
    if (chunk.type === 'tool-input-available' && !isInvokeCall(chunk)) return;
    if (chunk.type !== 'tool-input-available' && !panels) return;
    panelsIn(ctx).handleChunk(chunk);
  }
});

function isInvokeCall(chunk) {
  const input = chunk.input;
  return Boolean(input && typeof input === 'object' && typeof input.agentSlug === 'string' && 'input' in input);
}

function inlineNote(data) {
  const note = document.createElement('p');
  note.className = 'notice-line a2a-note';
  note.dataset.part = 'data-a2a-task-started';
  note.textContent = `→ ${data.calleeAgentName || data.calleeAgentSlug}`;
  return note;
}

// A reply shown as saved while it waits (``awaiting_approval``) may wait for the called agent's approval:
// its panel opens again, so the approval can be answered after a reload too.
dataHandlers['data-a2a-task-started'] = (data, ctx) => {
  if ((ctx.live || ctx.waiting) && data && data.taskId) panelsIn(ctx).handleChunk({ type: 'data-a2a-task-started', data });
  return inlineNote(data || {});
};
