// Names of tool types, and the texts of the tools a fresh install creates, in the reader's language. A
// default tool keeps its English name and description in the database; while an admin has not changed
// them, pages show their translation (the English originals come with the page as #default-tool-texts).
import { t } from './i18n.js';

const node = document.getElementById('default-tool-texts');
const defaults = node ? JSON.parse(node.textContent) : {};

function translated(key, fallback) {
  return t(key) !== key ? t(key) : fallback;
}

export function typeName(type) {
  return translated(`toolType.${type.slug}`, type.name);
}

export function toolName(tool) {
  const original = defaults[tool.type];
  return original && tool.name === original[0] ? translated(`toolDefault.${tool.type}.name`, tool.name) : tool.name;
}

export function toolDescription(tool) {
  const original = defaults[tool.type];
  return original && tool.description === original[1]
    ? translated(`toolDefault.${tool.type}.description`, tool.description) : tool.description;
}
