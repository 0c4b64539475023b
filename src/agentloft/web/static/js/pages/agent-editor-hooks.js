// Extra sections of the agent editor register here: {open(agent|null), save(savedAgent), payload?(formData)};
// `payload` adds fields to the agent's own request body, `save` runs after the agent itself is stored. A module of its own, so that the editor and its sections share one
// list although their entry scripts load separately.
export const editorHooks = [];
